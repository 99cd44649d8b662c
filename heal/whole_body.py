"""A whole upstream body, read into a capped buffer and capped again after its decoding.

A non-streamed healed response is read whole to be judged. ``httpx.Response.aread`` keeps
whatever comes, and inflates a compressed body before anything could look at its size: half a
megabyte of gzip from an upstream took the ``toolwire serve`` process to 2.6 GB, and 512 MB of
plain JSON to 2.7 GB (issue 29, M1). :func:`read_whole` stops at :data:`WHOLE_BODY_CAP`
bytes of the decoded body: ``gzip`` and ``deflate`` are inflated with zlib's own bound on
each call's output (``max_length``), so a bomb never grows past the cap plus one call's
output; an encoding zlib does not read (``br``, ``zstd``, two stacked) is decoded by httpx one
network read at a time and checked after each. Past the cap it raises
``httpx.DecodingError``: the healing answers it as it answers any body that broke the
protocol (:mod:`toolwire.heal.faults`: a typed 502, not sent again).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable

import httpx

__all__ = ["WHOLE_BODY_CAP", "read_whole"]

#: The largest decoded whole body read (the framing cap of one streamed event, the same size).
WHOLE_BODY_CAP = 16 * 1024 * 1024

#: ``inflate(data, room)``: up to ``room`` bytes of what ``data`` inflates to.
_Inflate = Callable[[bytes, int], bytes]


async def read_whole(response: httpx.Response, cap: int = WHOLE_BODY_CAP) -> bytes:
    """The decoded body of ``response``, at most ``cap`` bytes of it; the response is closed.

    Raises ``httpx.DecodingError`` past ``cap`` (or for a body zlib cannot inflate), and
    whatever reading the network raises.
    """
    try:
        return response.content  # already read (a body answered in memory)
    except httpx.ResponseNotRead:
        pass
    coding = response.headers.get("content-encoding", "identity").strip().lower()
    inflate = _inflater(coding)
    body = bytearray()
    try:
        pieces = response.aiter_raw() if inflate is not None else response.aiter_bytes()
        async for piece in pieces:
            body += piece if inflate is None else inflate(piece, cap + 1 - len(body))
            if len(body) > cap:
                raise httpx.DecodingError(
                    f"the upstream's body is over {cap} bytes"
                    + (f" once its {coding} is inflated" if coding != "identity" else "")
                    + "; toolwire reads a whole body up to that"
                )
    finally:
        await response.aclose()
    return bytes(body)


def _inflater(coding: str) -> _Inflate | None:
    """How the raw bytes of ``coding`` are turned into the body, bounded; ``None``: by httpx."""
    if coding in ("identity", ""):
        return _as_is
    if coding in ("gzip", "x-gzip"):
        return _bounded(zlib.decompressobj(zlib.MAX_WBITS | 16))
    if coding == "deflate":
        return _deflate()
    return None


def _as_is(data: bytes, room: int) -> bytes:
    return data


def _bounded(inflater: zlib._Decompress) -> _Inflate:
    def inflate(data: bytes, room: int) -> bytes:
        try:
            return inflater.decompress(data, max(room, 1))
        except zlib.error as error:
            raise httpx.DecodingError(
                f"the upstream's compressed body is broken: {error}"
            ) from None

    return inflate


def _deflate() -> _Inflate:
    """``deflate`` as httpx reads it: zlib-wrapped, or raw when the first bytes say so."""
    state: list[_Inflate] = []

    def inflate(data: bytes, room: int) -> bytes:
        if not state:
            try:
                probe = zlib.decompressobj()
                out = probe.decompress(data, max(room, 1))
            except zlib.error:
                state.append(_bounded(zlib.decompressobj(-zlib.MAX_WBITS)))
                return state[0](data, room)
            state.append(_bounded(probe))
            return out
        return state[0](data, room)

    return inflate
