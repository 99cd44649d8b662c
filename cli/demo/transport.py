"""How a demo turn reaches a model: a live server over HTTP, or a recording of one.

Both give the agent loop the same thing for a request: a source for ``Pipeline.collect`` (the
``httpx.Response`` itself when the status is an error, so toolwire reports the status; the
body's bytes otherwise). The live transport keeps every body it read, byte for byte, with its
request: that is what ``--record`` writes and ``--replay`` reads back.

A recording is JSON Lines, one object per turn, in the order the turns ran::

    {"run": "hello@16", "turn": 1, "request": {...}, "status": 200, "body": "data: {...}\\n\\n"}

``body`` is the response body decoded as UTF-8 (the server sends UTF-8 JSON; bytes that are
not UTF-8 are kept as surrogate escapes and written back as they were). Replaying checks that
the agent loop sends the recorded request at each turn in everything the loop decides (see
:func:`request_shape`), so a recording also pins down the loop that made it; the texts of the
judge's messages may change between versions without breaking it.
"""

from __future__ import annotations

import gzip
from collections.abc import AsyncIterator, Iterable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any, Protocol

import msgspec

__all__ = [
    "Exchange",
    "LiveTransport",
    "RecordingMismatch",
    "ReplayTransport",
    "Transport",
    "read_recording",
    "request_shape",
    "write_recording",
]


class Exchange(msgspec.Struct, frozen=True):
    """One turn as it went over the wire: the request, the HTTP status and the body."""

    run: str
    turn: int
    request: dict[str, Any]
    status: int
    body: str


class RecordingMismatch(Exception):
    """A recording does not hold the turn the agent loop asks for."""


class Transport(Protocol):
    """What the agent loop sends a request through."""

    def exchange(
        self, run: str, turn: int, request: dict[str, Any]
    ) -> AbstractAsyncContextManager[Any]:
        """Send ``request``; the context gives a source for ``Pipeline.collect``."""
        ...


class _LiveExchange:
    def __init__(
        self, transport: LiveTransport, run: str, turn: int, request: dict[str, Any]
    ) -> None:
        self._transport = transport
        self._run = run
        self._turn = turn
        self._request = request
        self._pieces: list[bytes] = []
        self._status = 0
        self._stream: Any = None

    async def __aenter__(self) -> Any:
        client = self._transport.client
        self._stream = client.stream("POST", "/chat/completions", json=self._request)
        response = await self._stream.__aenter__()
        self._status = response.status_code
        if response.status_code >= 400:
            await response.aread()
            self._pieces.append(response.content)
            return response  # toolwire quotes the status and the body
        return self._tee(response.aiter_bytes())

    async def _tee(self, reads: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
        async for piece in reads:
            self._pieces.append(piece)
            yield piece

    async def __aexit__(self, *exc: object) -> None:
        try:
            await self._stream.__aexit__(*exc)
        finally:
            body = b"".join(self._pieces)
            self._transport.exchanges.append(
                Exchange(
                    self._run,
                    self._turn,
                    self._request,
                    self._status,
                    body.decode("utf-8", "surrogateescape"),
                )
            )


class LiveTransport:
    """POST ``/chat/completions`` on an OpenAI-compatible base URL, keeping every body read.

    Build and use it inside one event loop: ``async with LiveTransport(url) as transport:``.
    """

    def __init__(self, base_url: str, api_key: str | None = None, timeout: float = 300.0) -> None:
        import httpx  # the [local] extra (or [http]) installs it; replay never needs it

        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.client = httpx.AsyncClient(
            base_url=base_url.rstrip("/"),
            headers=headers,
            timeout=httpx.Timeout(timeout, connect=10.0),
        )
        self.exchanges: list[Exchange] = []

    def exchange(
        self, run: str, turn: int, request: dict[str, Any]
    ) -> AbstractAsyncContextManager[Any]:
        """Send ``request`` and stream the answer (see the module docstring)."""
        return _LiveExchange(self, run, turn, request)

    async def __aenter__(self) -> LiveTransport:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.client.aclose()


class _ReplayExchange:
    def __init__(self, recorded: Exchange) -> None:
        self._recorded = recorded

    async def __aenter__(self) -> Any:
        recorded = self._recorded
        if recorded.status >= 400:
            return _RecordedErrorStatus(recorded.status, recorded.body)
        return recorded.body.encode("utf-8", "surrogateescape")

    async def __aexit__(self, *exc: object) -> None:
        return None


class _RecordedErrorStatus:
    """A recorded HTTP error response, shaped like the ``httpx.Response`` toolwire was given.

    toolwire recognises a response by its ``status_code``, ``headers``, ``aiter_bytes`` and
    ``aclose``, and quotes the status and the body, as it did live.
    """

    def __init__(self, status: int, body: str) -> None:
        self.status_code = status
        self.headers: dict[str, str] = {}
        self.reason_phrase = ""
        self._body = body.encode("utf-8", "surrogateescape")

    async def aiter_bytes(self) -> AsyncIterator[bytes]:
        """The recorded body, in one piece."""
        yield self._body

    async def aclose(self) -> None:
        """Nothing to close."""


class ReplayTransport:
    """Answers each request with the recorded body of the same run and turn."""

    def __init__(self, exchanges: Iterable[Exchange]) -> None:
        self._by_turn = {(item.run, item.turn): item for item in exchanges}
        self.exchanges: list[Exchange] = []

    def runs(self) -> set[str]:
        """The names (``task@budget``) of the runs the recording holds."""
        return {run for run, _ in self._by_turn}

    def exchange(
        self, run: str, turn: int, request: dict[str, Any]
    ) -> AbstractAsyncContextManager[Any]:
        """The recorded answer; :class:`RecordingMismatch` when the request differs."""
        recorded = self._by_turn.get((run, turn))
        if recorded is None:
            raise RecordingMismatch(f"the recording has no turn {turn} of run {run}")
        if request_shape(recorded.request) != request_shape(request):
            raise RecordingMismatch(
                f"turn {turn} of run {run}: this demo sends another request than the recorded "
                "one (the recording was made by another version of the demo)"
            )
        self.exchanges.append(recorded)
        return _ReplayExchange(recorded)


def request_shape(request: dict[str, Any]) -> Any:
    """What the agent loop decides in a request: the texts it quotes from toolwire left out.

    The model, the budget, the forced tool, the tools offered, and for each message its role
    and the ids and names of the calls it holds or answers. The task's own words are compared
    too (system and first user message), so a recording of another suite never replays.
    """
    messages = request.get("messages") or []
    shape = []
    for position, message in enumerate(messages):
        calls = [
            (call.get("id"), (call.get("function") or {}).get("name"))
            for call in message.get("tool_calls") or ()
        ]
        words = message.get("content") if position < 2 else None
        shape.append((message.get("role"), message.get("tool_call_id"), calls, words))
    tools = [(tool.get("function") or {}).get("name") for tool in request.get("tools") or ()]
    return (
        request.get("model"),
        request.get("max_tokens"),
        request.get("tool_choice"),
        tools,
        shape,
    )


def write_recording(path: Path, exchanges: Iterable[Exchange]) -> None:
    """Write ``exchanges`` as JSON Lines (gzip-compressed when ``path`` ends with ``.gz``)."""
    encoder = msgspec.json.Encoder()
    opener: Any = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "wb") as out:
        for item in exchanges:
            out.write(encoder.encode(item) + b"\n")


def read_recording(data: bytes, where: str) -> list[Exchange]:
    """The exchanges of a JSON Lines recording (gzip or not); ``ValueError`` naming the bad line."""
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as error:
            raise ValueError(f"{where} is not a readable gzip file: {error}") from None
    decoder = msgspec.json.Decoder(Exchange)
    found = []
    for number, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        try:
            found.append(decoder.decode(line))
        except msgspec.DecodeError as error:
            raise ValueError(f"{where} line {number}: {error}") from None
    if not found:
        raise ValueError(f"{where} holds no recorded turn")
    return found
