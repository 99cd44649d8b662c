"""Judged events back into Anthropic Messages stream events: the Anthropic mapper, run backwards.

:class:`AnthropicEventEncoder` writes one client response as Messages stream events (plain
dicts, framed by :func:`~toolwire.adapters.encoding.named_sse_frame`);
:data:`~toolwire.adapters.anthropic.healing.ANTHROPIC` binds it with the requests and whole
bodies of ``POST /v1/messages``. What a client can rely on, beyond the contract every healing
encoder keeps (:mod:`toolwire.adapters.openai_chat.encoder` states it):

- ``message_start`` goes out as soon as the response is known. Its usage is ``0`` / ``0``: the
  input count is not known then. ``message_delta`` carries the final usage, ``input_tokens``
  included, as newer API versions send it (the SDK's accumulated ``Message.usage`` takes both).
- Content blocks are numbered 0, 1, 2... in the order they go out. Text goes out at once as
  ``text_delta`` pieces of an open ``text`` block; an accepted call goes out whole as a
  ``tool_use`` block (``input: {}``, then ONE ``input_json_delta`` with the arguments: byte for
  byte when ``ok``, compact JSON when repaired), which closes the block before it. No empty
  text block ever opens (the API refuses them in history).
- ``tool_use`` ids are ones the API accepts back: toolwire's ids with ``_`` for any character
  outside ``[a-zA-Z0-9_-]`` (as the Anthropic history format writes them), and ``_h2``,
  ``_h3``... for an id the response already used (Chat's ``~h2`` would be refused on replay).
- The finish is ``max_tokens`` for a cut at the token limit (``model_context_window_exceeded``
  is kept, it names the limit too), else the server's ``stop_reason``; ``tool_use`` with no
  call sent becomes ``end_turn``. ``stop_sequence`` is always ``null``: toolwire's events do
  not carry which sequence matched.
- An error is an ``error`` event, last: the ``anthropic`` SDK raises ``APIStatusError`` on it.

Thinking (``thinking`` on, and interleaved thinking: blocks of thinking between calls). The API
verifies every thinking block a client sends back: its ``signature`` must be the one the API gave
for that text, and a tool turn must start with its thinking. So a thinking block goes out where the
model wrote it, signed, before the blocks that follow it: its text at once, piece by piece, in an
open ``thinking`` block; its ``signature_delta`` and its ``content_block_stop`` as the mapper
reports the block whole, at its own ``content_block_stop``
(:meth:`AnthropicEventEncoder.provider_block`), before any call that follows it. A
``redacted_thinking`` block goes out as received, in that same place. A thinking block that never
got its signature (a stream cut inside it) is never closed signed: that response ends without a
finish, as it came. The healing session sends a response's thinking only while its context is the
client's (:attr:`AnthropicEventEncoder.SIGNED_REASONING`). A request that offers server tools
(``web_search``, ``code_execution``..., MCP servers) passes untouched: their blocks, like citations,
reach toolwire only in ``ProviderContent``. (A whole body, healed, keeps them from the first body:
:meth:`AnthropicWireFormat.healed_body`.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from ...core.events import (
    Event,
    Finish,
    ProviderError,
    ResponseInfo,
    ToolCallReady,
    ToolCallRepaired,
    Usage,
)
from ...core.wire import WireItem
from ..encoding import EncoderState, call_arguments, error_payload, failure_type, re_encode
from .history import wire_id
from .wire import LENGTH_STOP_REASONS

if TYPE_CHECKING:
    from ...core.wire import HealEncoder

__all__ = ["MESSAGE_STOP", "AnthropicEventEncoder"]

#: The last event of a finished response.
MESSAGE_STOP: dict[str, Any] = {"type": "message_stop"}
_EMPTY_THINKING: dict[str, Any] = {"type": "thinking", "thinking": "", "signature": ""}


class AnthropicEventEncoder(EncoderState):
    """Writes one Messages response, event by event, for one client. Sans-I/O, not reusable.

    Use :meth:`feed` for a plain re-encoding of one judged stream, or the building blocks
    (:meth:`text`, :meth:`call`, :meth:`finish`...) when the healing session decides.
    """

    #: The client's finish for a cut at the output-token limit.
    LENGTH: ClassVar[str] = "max_tokens"
    #: The client's finish for a turn that ends with calls to run.
    CALLS: ClassVar[str] = "tool_use"
    #: A thinking block is signed over everything before it: the API refuses it (or, with
    #: preserved thinking, drops it) anywhere else than where the model wrote it. The healing
    #: session therefore never sends a retry's thinking, nor what followed a rejected call.
    SIGNED_REASONING: ClassVar[bool] = True

    __slots__ = ("_message_id", "_model", "_next_index", "_open")

    def __init__(self) -> None:
        # Anthropic's ids allow only ``[a-zA-Z0-9_-]``: a repeated one gets ``_h2``.
        super().__init__(id_separator="_")
        self._message_id: str | None = None
        self._model: str | None = None
        self._next_index = 0
        #: The kind of the open block (``text`` / ``thinking``), or ``None``.
        self._open: str | None = None

    # -- blocks ------------------------------------------------------------------------------

    def _opened(self) -> list[WireItem]:
        message: dict[str, Any] = {
            "id": self._message_id or "msg_toolwire",
            "type": "message",
            "role": "assistant",
            "model": self._model or "",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 0, "output_tokens": 0},
        }
        return [{"type": "message_start", "message": message}]

    def _close(self, out: list[WireItem]) -> None:
        if self._open is not None:
            out.append({"type": "content_block_stop", "index": self._next_index - 1})
            self._open = None

    def _start(self, out: list[WireItem], block: dict[str, Any]) -> int:
        self._close(out)
        index = self._next_index
        self._next_index += 1
        out.append({"type": "content_block_start", "index": index, "content_block": block})
        return index

    def _piece(self, kind: str, delta: dict[str, Any]) -> list[WireItem]:
        out: list[WireItem] = []
        self._opening(out)
        if self._open != kind:
            empty = {"type": "text", "text": ""} if kind == "text" else _EMPTY_THINKING
            self._start(out, dict(empty))
            self._open = kind
        out.append({"type": "content_block_delta", "index": self._next_index - 1, "delta": delta})
        return out

    def info(self, event: ResponseInfo) -> list[WireItem]:
        """The response is known: take its id and model (only before anything went out)."""
        if not self._started:
            self._message_id = event.response_id
            self._model = event.model
        out: list[WireItem] = []
        self._opening(out)
        return out

    def text(self, text: str) -> list[WireItem]:
        """A piece of the visible answer, at once, in the open ``text`` block."""
        if not text:
            return []
        return self._piece("text", {"type": "text_delta", "text": text})

    def reasoning(self, text: str) -> list[WireItem]:
        """A piece of reasoning, at once, in the open ``thinking`` block (see the module doc)."""
        if not text:
            return []
        return self._piece("thinking", {"type": "thinking_delta", "thinking": text})

    def thinking_signature(self, signature: str) -> list[WireItem]:
        """The open thinking block's signature, before the block closes; else nothing."""
        if self._open != "thinking" or not signature:
            return []
        delta = {"type": "signature_delta", "signature": signature}
        return [{"type": "content_block_delta", "index": self._next_index - 1, "delta": delta}]

    def provider_block(self, block: Any) -> list[WireItem]:
        """A signed ``thinking`` block or a ``redacted_thinking`` block, whole, as it ended.

        The open thinking block (its text went out at once, piece by piece) gets its
        ``signature_delta`` and closes. A thinking block none of whose text went out (an empty
        one, as ``display: "omitted"`` sends) goes out whole: its start, its text, its
        signature, its stop, as the API streams it. A ``redacted_thinking`` block goes out as
        received in a block of its own. Anything else: nothing.
        """
        out: list[WireItem] = []
        if not isinstance(block, dict):
            return out
        kind = block.get("type")
        signature = block.get("signature")
        if kind == "thinking" and isinstance(signature, str) and signature:
            self._opening(out)
            if self._open != "thinking":
                index = self._start(out, dict(_EMPTY_THINKING))
                self._open = "thinking"
                text = block.get("thinking")
                if isinstance(text, str) and text:
                    delta = {"type": "thinking_delta", "thinking": text}
                    out.append({"type": "content_block_delta", "index": index, "delta": delta})
            out += self.thinking_signature(signature)
            self._close(out)
        elif kind == "redacted_thinking":
            self._opening(out)
            index = self._start(out, dict(block))
            out.append({"type": "content_block_stop", "index": index})
        return out

    def call(self, event: ToolCallReady | ToolCallRepaired) -> list[WireItem]:
        """One accepted call, whole: a ``tool_use`` block with its input in one delta."""
        out: list[WireItem] = []
        self._opening(out)
        # One id per call, and one the API accepts when the client sends the turn back.
        call_id = self._ids.claim(wire_id(event.call.call_id))
        block = {"type": "tool_use", "id": call_id, "name": event.call.name, "input": {}}
        index = self._start(out, block)
        delta = {"type": "input_json_delta", "partial_json": call_arguments(event)}
        out.append({"type": "content_block_delta", "index": index, "delta": delta})
        out.append({"type": "content_block_stop", "index": index})
        self._calls_sent += 1
        return out

    # -- the end -----------------------------------------------------------------------------

    def usage(self, event: Usage) -> None:
        """Take a usage report: Anthropic's are cumulative, so the last one counts."""
        self._usage = event

    def finish(self, reason: str) -> list[WireItem]:
        """Close the open block; ``message_delta`` with ``reason`` and the usage."""
        out: list[WireItem] = []
        self._opening(out)
        self._close(out)
        self._finished = True
        delta = {"stop_reason": reason, "stop_sequence": None}
        out.append({"type": "message_delta", "delta": delta, "usage": _usage_object(self._usage)})
        return out

    def end(self) -> list[WireItem]:
        """``message_stop``; nothing after an error."""
        if self._failed:
            return []
        out: list[WireItem] = []
        self._opening(out)
        self._close(out)
        out.append(dict(MESSAGE_STOP))
        return out

    def error(self, error: dict[str, Any]) -> list[WireItem]:
        """An ``error`` event carrying ``error``; the last thing sent, as the API does."""
        self._failed = True
        return [{"type": "error", "error": error}]

    def client_finish_reason(self, finish: Finish, *, calls_sent: bool) -> str:
        """The ``stop_reason`` a client receives for ``finish`` (see the module docstring)."""
        raw = finish.raw
        if finish.cut_by == "token_limit":
            return raw if raw in LENGTH_STOP_REASONS else self.LENGTH
        if raw is None:
            return self.CALLS if calls_sent else "end_turn"
        if raw == self.CALLS and not calls_sent:
            return "end_turn"
        return raw

    def upstream_error(self, error: ProviderError) -> dict[str, Any]:
        """The server's ``error`` object when its payload is whole, else toolwire's words.

        toolwire's words go out as ``api_error`` (a failure on the server's side, which the
        SDK treats as such), or under the server's own error type when only that was read.
        """
        inner = error_payload(error).get("error")
        if isinstance(inner, dict) and isinstance(inner.get("type"), str):
            return inner
        kind = error.code if error.kind == "error_payload" and error.code else "api_error"
        return {"type": kind, "message": error.message}

    def heal_failed(
        self, message: str, code: str, *, status: int = 502, upstream: bool = False
    ) -> dict[str, Any]:
        """The error object of an exchange toolwire ends: Anthropic's shape, toolwire's type.

        ``code`` (``tool_call_rejected``, ``retry_http_status``, ``upstream_dropped``...) and
        the usage spent (``usage``, as ``message_delta`` writes it) are extra fields the SDK
        keeps in ``APIStatusError.body``.
        """
        error: dict[str, Any] = {"type": failure_type(upstream), "message": message, "code": code}
        if self._usage is not None:
            error["usage"] = _usage_object(self._usage)
        return error

    # -- a plain re-encoding -----------------------------------------------------------------

    def feed(self, event: Event) -> list[WireItem]:
        """What ``event`` of a judged stream puts on the wire, with no healing
        (:func:`~toolwire.adapters.encoding.re_encode`)."""
        return re_encode(self, event)


def _usage_object(usage: Usage | None) -> dict[str, Any]:
    """``message_delta.usage``: cumulative counts; ``output_tokens`` is required by the SDK."""
    if usage is None:
        return {"output_tokens": 0}
    body: dict[str, Any] = {"output_tokens": usage.output_tokens or 0}
    if usage.input_tokens is not None:
        body["input_tokens"] = usage.input_tokens
    if usage.reasoning_tokens is not None:
        body["output_tokens_details"] = {"thinking_tokens": usage.reasoning_tokens}
    return body


if TYPE_CHECKING:
    _encoder: HealEncoder = AnthropicEventEncoder()
