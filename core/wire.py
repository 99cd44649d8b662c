"""The write side's ports: what a healing session needs of one wire format.

The healing session (:mod:`toolwire.heal.session`) and the shells (the httpx transport, the
``toolwire serve`` proxy) are the same for every provider; what differs is written once per
format, in its adapter package (``adapters/<provider>/``), behind two small protocols, as its
reading side is behind :class:`~toolwire.core.mapper.ProviderMapper`:

- :class:`HealEncoder` writes one client response, event by event, in the format (the format's
  mapper run backwards). The session calls its building blocks; the items it returns are the
  format's own objects (plain dicts; :data:`DONE` for Chat's end marker), framed for the wire
  by :meth:`WireFormat.frame`.
- :class:`WireFormat` knows the requests and whole bodies of the format: which request is
  healed and what goes upstream (a :class:`HealPlan`), the follow-up that asks again, the
  token-limit keys, and how a non-streamed body is read as a stream and written back.

A provider names its format on its :class:`~toolwire.adapters.provider.Provider` as a
:data:`WireFormatFactory`, given :class:`HealSettings`, as it names its mapper as a
:data:`~toolwire.core.mapper.MapperFactory`.

The session speaks each format's own finish vocabulary through the encoder: ``LENGTH`` (the
token limit: ``length``, ``max_tokens``, ``incomplete``), ``CALLS`` (a turn that ends with calls
to run), and :meth:`HealEncoder.client_finish_reason` for everything else.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, ClassVar, Final, Protocol

import msgspec

from .events import (
    Finish,
    ProviderContent,
    ProviderError,
    ResponseInfo,
    ToolCallReady,
    ToolCallRepaired,
    Usage,
)
from .results import ToolResult
from .turn import Turn

__all__ = [
    "DONE",
    "Constraint",
    "Done",
    "HealEncoder",
    "HealPlan",
    "HealSettings",
    "NextMessages",
    "WireFormat",
    "WireFormatFactory",
    "WireItem",
]


class Done:
    """The end marker of a stream (``data: [DONE]``): not a chunk, so not a dict."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "DONE"


#: The one end marker.
DONE: Final = Done()

#: What an encoder or a healing session gives back: the format's objects (plain dicts), and
#: for Chat Completions the end marker last.
WireItem = dict[str, Any] | Done

#: Writes the messages that follow a turn (``Pipeline.next_messages``).
NextMessages = Callable[[Turn, Sequence[ToolResult]], list[dict[str, Any]]]


class HealPlan(msgspec.Struct, frozen=True, kw_only=True):
    """How one client request is sent upstream.

    ``body`` is what goes upstream, decoded; ``content`` its bytes when they differ from the
    client's (``None``: the client's bytes go up unchanged). ``streaming``: the client asked
    for a stream. ``client_wants_usage``: the client asked for the usage chunk itself
    (``stream_options.include_usage``).

    ``adapted`` counts what was rewritten so that the server accepts the request (kind ->
    count; empty: nothing). ``whole_upstream``: the client streams, but the server cannot
    stream this request, so ``body`` asks for a whole response and the healing streams it.
    ``heal``: ``False`` for a request that is only adapted (no tools to judge): its response
    passes through untouched. ``query_params``: URL query parameters set upstream, retries
    included (Gemini's JSON-array stream is asked for with ``alt=sse``, the stream toolwire
    reads, and written back as an array). ``media_type``: the content type of a streamed body
    the client receives. ``repaired`` counts the earlier calls of the request's history
    rewritten because a server refuses their arguments (problem kind -> calls, as
    ``HistoryRepair.changes`` names them; empty: none): one broken call would otherwise fail
    every later request.
    """

    body: dict[str, Any]
    content: bytes | None
    streaming: bool
    client_wants_usage: bool
    adapted: dict[str, int] = msgspec.field(default_factory=dict)
    whole_upstream: bool = False
    heal: bool = True
    query_params: tuple[tuple[str, str], ...] = ()
    media_type: str = "text/event-stream; charset=utf-8"
    repaired: dict[str, int] = msgspec.field(default_factory=dict)


class HealEncoder(Protocol):
    """Writes one client response in a wire format, piece by piece. Sans-I/O, not reusable."""

    #: The client's finish for a cut at the output-token limit (``length``, ``max_tokens``...).
    LENGTH: ClassVar[str]
    #: The client's finish for a turn that ends with calls to run (``tool_calls``, ``tool_use``).
    CALLS: ClassVar[str]
    #: The format's reasoning is signed over everything before it (Anthropic thinking): it
    #: goes out only where the model wrote it, as it comes, and never later (a retry's, or
    #: what followed a rejected call, whose context the client never sees, is dropped).
    SIGNED_REASONING: ClassVar[bool]

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

    def provider_block(self, block: Any) -> list[WireItem]:
        """A provider's opaque block reported whole as it ended (``ProviderContent`` with
        ``scope="block"``: a signed thinking block); nothing for a format that writes none."""

    def call(self, event: ToolCallReady | ToolCallRepaired) -> list[WireItem]:
        """One accepted call, whole (its arguments as the kit's ``call_arguments`` writes them)."""

    def provider_content(self, event: ProviderContent) -> list[WireItem]:
        """The response's opaque parts (signatures...), before its finish; most formats need
        nothing of them (``EncoderState`` takes them as nothing)."""

    def usage(self, event: Usage) -> None:
        """Count one usage report of the response (for the kit's ``re_encode``)."""

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

    def heal_failed(
        self, message: str, code: str, *, status: int = 502, upstream: bool = False
    ) -> dict[str, Any]:
        """The error object of an exchange toolwire ends itself: its healing failed (``type:
        toolwire_heal_failed``), or, with ``upstream``, the network failed it (``type:
        toolwire_upstream_error``: a drop, a stall, a protocol error). ``status`` is the HTTP
        status it stands for (a format whose errors carry one writes it); the usage set with
        :meth:`set_usage` (what the exchange spent) goes with it in the format's shape."""


class WireFormat(Protocol):
    """One wire format's requests and whole bodies, for healing. Stateless; one per format."""

    #: The provider name its mapper and history format are registered under.
    provider: str

    @property
    def path(self) -> str | re.Pattern[str]:
        """Where its endpoint is: a path suffix (``/chat/completions``, ``/messages``...), or,
        for an endpoint whose path holds a variable (Gemini's model: ``/v1beta/models/{model}
        :streamGenerateContent``) or whose query chooses the framing (``alt=sse``), a pattern
        searched in ``path?query``."""

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

    def empty_body(self, items: Sequence[WireItem]) -> dict[str, Any]:
        """A whole body with nothing in it yet, in the form ``items`` open with (their id,
        model, creation time): what :meth:`healed_body` folds the items into when no upstream
        body came to start from (the upstream answered a tool-parser error, and the calls read
        from its quote are the answer)."""

    def error_body(self, items: Iterable[WireItem]) -> dict[str, Any] | None:
        """The whole error body when the session ended in an error, else ``None``."""

    def constrained(self, body: Mapping[str, Any], tool: str) -> Constraint:
        """``body`` (a follow-up) asking the server for a call to ``tool`` whose arguments its
        own structured-output engine keeps to ``tool``'s schema, in the way the upstream's
        server takes it (``docs/healing.md``, "A constrained re-ask"); or why it cannot be."""


class Constraint(msgspec.Struct, frozen=True, kw_only=True):
    """A re-ask constrained to one tool, or why it is not (``docs/healing.md``).

    ``tool`` is the tool the model chose (the call that was rejected). ``mechanism`` is how the
    server was asked, in its own words (``tool_choice=function+strict``,
    ``tool_choice=required+tools``...), and ``body`` the request that asks so; with no
    mechanism the re-ask is not constrained, ``skipped`` says why (``off``, ``no_mechanism``,
    ``schema_unsupported``, ``tool_not_offered``, ``thinking``, ``truncated``, ``reason``,
    ``no_tool_named``, ``several_calls``, ``nothing_rejected``; ``detail`` names what: the
    keyword, the reason), and ``body`` is ``None`` (``Pipeline.constrained_request`` gives the
    request unchanged). ``enforces_schema``: the server's engine keeps the arguments to the
    schema (``False``: it forces the tool; the judge checks the arguments in any case).
    """

    tool: str | None = None
    body: dict[str, Any] | None = None
    mechanism: str | None = None
    enforces_schema: bool = False
    skipped: str | None = None
    detail: str = ""

    @property
    def applied(self) -> bool:
        """Whether the re-ask is constrained."""
        return self.mechanism is not None


class HealSettings(msgspec.Struct, frozen=True, kw_only=True):
    """What a healing transport tells every format it opens (from its own options).

    ``reasoning_field``: the Chat Completions delta key reasoning goes out under
    (``reasoning_content``, or ``reasoning`` for OpenRouter's clients); a format that has no
    such choice ignores it. ``upstream`` names the kind of server the upstream is (the
    healing's ``provider``) and ``upstream_local`` says it is a local server: a format served by
    local servers too (Messages, Responses) asks for a constrained re-ask in the way that server
    reads its endpoint (``WireFormat.constrained``).
    """

    reasoning_field: str = "reasoning_content"
    upstream: str = "openai-chat"
    upstream_local: bool = False


#: Opens one provider's healing format, or its formats when its endpoints differ in more than
#: the body (Gemini: whole, streamed as SSE, streamed as a JSON array); a provider without one
#: has ``None`` on its entry.
WireFormatFactory = Callable[[HealSettings], WireFormat | tuple[WireFormat, ...]]
