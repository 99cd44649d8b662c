"""What healing needs to know of one wire format: the seam between the session and a format.

The healing session (:mod:`~toolwire.heal.session`) and the shells (the httpx transport, the
``toolwire serve`` proxy) are the same for every provider; what differs is written once per
format behind two small protocols:

- :class:`HealEncoder` writes one client response, event by event, in the format (the format's
  adapter run backwards). The session calls its building blocks; the items it returns are the
  format's own objects (plain dicts; :data:`~toolwire.heal.encoder.DONE` for Chat's end
  marker), framed for the wire by :meth:`WireFormat.frame`.
- :class:`WireFormat` knows the requests and whole bodies of the format: which request is
  healed and what goes upstream, the follow-up that asks again, the token-limit keys, and how
  a non-streamed body is read as a stream and written back.

The session speaks each format's own finish vocabulary through the encoder: ``LENGTH`` (the
token limit: ``length``, ``max_tokens``, ``incomplete``), ``CALLS`` (a turn that ends with calls
to run), and :meth:`HealEncoder.client_finish_reason` for everything else.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, ClassVar, Protocol

import msgspec

from ..core.events import (
    Finish,
    ProviderError,
    ResponseInfo,
    ToolCallReady,
    ToolCallRepaired,
    Usage,
)
from ..core.turn import Turn
from .encoder import WireItem
from .request import HealPlan, NextMessages

__all__ = ["HealEncoder", "WireFormat", "named_sse_frame", "with_first_parts"]


class HealEncoder(Protocol):
    """Writes one client response in a wire format, piece by piece. Sans-I/O, not reusable."""

    #: The client's finish for a cut at the output-token limit (``length``, ``max_tokens``...).
    LENGTH: ClassVar[str]
    #: The client's finish for a turn that ends with calls to run (``tool_calls``, ``tool_use``).
    CALLS: ClassVar[str]

    @property
    def calls_sent(self) -> int:
        """How many calls went out."""

    @property
    def finished(self) -> bool:
        """Whether the finish went out."""

    def info(self, event: ResponseInfo) -> list[WireItem]:
        """The response is known (the first response's id and model name every item)."""

    def text(self, text: str) -> list[WireItem]:
        """A piece of the visible answer, at once."""

    def reasoning(self, text: str) -> list[WireItem]:
        """A piece of reasoning, at once."""

    def call(self, event: ToolCallReady | ToolCallRepaired) -> list[WireItem]:
        """One accepted call, whole (its arguments by :func:`~.encoder.call_arguments`)."""

    def usage(self, event: Usage) -> None:
        """Count one usage report of the response (for :func:`~.encoder.re_encode`)."""

    def set_usage(self, usage: Usage | None) -> None:
        """The usage to report with the finish or the end (the sum over the exchange)."""

    def finish(self, reason: str) -> list[WireItem]:
        """The finish, with ``reason`` in the format's vocabulary."""

    def end(self) -> list[WireItem]:
        """What closes a finished response (usage, the end marker); nothing after an error."""

    def error(self, error: dict[str, Any]) -> list[WireItem]:
        """An in-band error carrying ``error`` (an object from the two methods below); last."""

    def client_finish_reason(self, finish: Finish, *, calls_sent: bool) -> str:
        """The finish the client receives for ``finish`` of a response that passed."""

    def upstream_error(self, error: ProviderError) -> dict[str, Any]:
        """The error object for a server's fatal error (its own payload when it is whole)."""

    def heal_failed(self, message: str, code: str) -> dict[str, Any]:
        """The error object for a healing that failed (``type: toolwire_heal_failed``)."""


class WireFormat(Protocol):
    """One wire format's requests and whole bodies, for healing. Stateless; one per format."""

    #: The provider name its mapper and history format are registered under.
    provider: str
    #: The path suffix of the endpoint it heals (``/chat/completions``, ``/messages``...).
    path: str

    def plan_request(self, content: bytes) -> HealPlan | None:
        """The plan for a client's request body, or ``None`` to pass it upstream untouched."""

    def encoder(self, plan: HealPlan) -> HealEncoder:
        """A new encoder for the client response of ``plan``."""

    def frame(self, items: Iterable[WireItem]) -> bytes:
        """``items`` as the bytes of the streamed body (server-sent events)."""

    def follow_up_body(
        self, body: Mapping[str, Any], turn: Turn, next_messages: NextMessages
    ) -> dict[str, Any]:
        """``body`` asked again, with ``turn`` and one result per call appended."""

    def raised_limit(
        self, body: Mapping[str, Any], ceiling: int
    ) -> tuple[dict[str, Any], int | None]:
        """``body`` with its output-token limit doubled up to ``ceiling`` (``None``: unchanged)."""

    def read_body(self, content: bytes) -> dict[str, Any] | None:
        """A non-streamed response body decoded, when it is one this format can heal."""

    def body_as_stream(self, body: Mapping[str, Any]) -> bytes:
        """The streamed body equivalent to a whole one (read by :meth:`read_body`)."""

    def healed_body(self, first: Mapping[str, Any], items: Iterable[WireItem]) -> dict[str, Any]:
        """The client's whole body: ``first`` with what the session sent folded in."""

    def error_body(self, items: Iterable[WireItem]) -> dict[str, Any] | None:
        """The whole error body when the session ended in an error, else ``None``."""


_encode = msgspec.json.Encoder().encode


def named_sse_frame(items: Iterable[WireItem]) -> bytes:
    """``event: <type>`` + ``data: <object>`` per item: the framing of Anthropic and Responses.

    Both name each event by its object's ``type``.
    """
    out = bytearray()
    for item in items:
        if isinstance(item, dict):
            out += b"event: " + str(item["type"]).encode() + b"\ndata: " + _encode(item) + b"\n\n"
    return bytes(out)


def with_first_parts(
    first: Sequence[Any],
    parts: Sequence[dict[str, Any]],
    *,
    reproduces: Callable[[Mapping[str, Any], Mapping[str, Any]], bool],
    written: tuple[str, ...],
    call_type: str,
) -> list[dict[str, Any]]:
    """A healed whole body's parts (Anthropic blocks, Responses items), each one the first body
    holds in the first body's own form, in order.

    ``parts`` is what the session sent; a part ``reproduces`` one of ``first`` when it is that
    part passed on unchanged. Such a part goes back as the first body had it (ids, signatures,
    annotations the encoder does not write), a call merged with what was sent (a repair
    changes its arguments). The first body's parts of types the encoder never writes
    (``written``: opaque ones) stay where they stood before the parts that follow them, and its
    opaque tail stays too when nothing new was sent (it belongs to that response alone).
    """
    out: list[dict[str, Any]] = []
    rest = [part for part in first if isinstance(part, dict)]
    new = False
    for part in parts:
        at = next((i for i, original in enumerate(rest) if reproduces(part, original)), None)
        if at is None:
            new = True
            out.append(part)
            continue
        out += [original for original in rest[:at] if original.get("type") not in written]
        out.append({**rest[at], **part} if part["type"] == call_type else rest[at])
        rest = rest[at + 1 :]
    if not new:
        out += [original for original in rest if original.get("type") not in written]
    return out
