"""Judged events back into Chat Completions chunks: the Chat adapter's mapper, run backwards.

:class:`ChatChunkEncoder` is sans-I/O: it is handed toolwire events and gives back chunk
objects (plain dicts in the ``chat.completion.chunk`` shape), framed for the wire by
:func:`~toolwire.adapters.encoding.sse_frame`. What a client reading the result can
rely on (every healing encoder keeps the same contract in its own format):

- Text and reasoning pass through as they arrive, one chunk per delta: toolwire never delays a
  client's first byte (the role chunk goes out as soon as the response is known).
- A tool call goes out only once judged, whole, in one chunk (header and arguments together,
  as xAI sends calls): an ``ok`` call with its arguments string byte for byte, a ``repaired``
  call with the repaired object as compact JSON (what history replays, see
  :func:`toolwire.adapters.history.replay_arguments`). A rejected call never goes out.
- Call indices are the client's own: 0, 1, 2... in the order the calls go out, whatever the
  server's indices were. Ids are toolwire's (a synthesized id for a server that sent none, ``~2``
  for a repeated one) and unique in the response: an id already sent gets ``~h2``, ``~h3``...
- The finish is corrected: a cut by the output-token limit (``Finish.cut_by == "token_limit"``)
  is reported as ``length`` even when the server said ``tool_calls`` (llama-cpp-python does), so
  the client's own length handling fires. Otherwise the server's raw value goes out unchanged
  (``tool_calls`` when no call went out becomes ``stop``; no value at all becomes ``tool_calls``
  or ``stop``).
- Usage is kept: reported once, in a ``choices: []`` chunk after the finish, as OpenAI sends it
  when ``stream_options.include_usage`` is set; or not at all (``usage=False``), for a client
  that did not ask for it.

Top-level fields the Chat mapper does not read (``system_fingerprint``, ``service_tier``,
``logprobs``, ``obfuscation``) are not carried; ``created`` is the time the encoder started
unless given.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
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
from ...core.wire import DONE, WireItem
from ..encoding import (
    EncoderState,
    add_usage,
    call_arguments,
    error_payload,
    failure_type,
    re_encode,
    sse_frame,
)

if TYPE_CHECKING:
    from ...core.wire import HealEncoder

__all__ = [
    "ChatChunkEncoder",
    "Chunk",
    "client_finish_reason",
    "encode_events",
    "upstream_error_object",
    "usage_object",
]

#: One chunk object, as it goes out in a ``data:`` line.
Chunk = dict[str, Any]


def client_finish_reason(finish: Finish, *, calls_sent: bool) -> str:
    """The ``finish_reason`` a client receives for ``finish`` (see the module docstring)."""
    if finish.cut_by == "token_limit":
        return "length"
    raw = finish.raw
    if raw is None:
        return "tool_calls" if calls_sent else "stop"
    if raw in ("tool_calls", "function_call") and not calls_sent:
        return "stop"
    return raw


def usage_object(usage: Usage) -> dict[str, Any]:
    """``usage`` in the Chat Completions shape (``prompt_tokens``, ``completion_tokens``...)."""
    body: dict[str, Any] = {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.total_tokens,
    }
    if usage.reasoning_tokens is not None:
        body["completion_tokens_details"] = {"reasoning_tokens": usage.reasoning_tokens}
    return body


class ChatChunkEncoder(EncoderState):
    """Writes one Chat Completions response, chunk by chunk, for one client. Sans-I/O.

    Use :meth:`feed` for a plain re-encoding of one judged stream, or the building blocks
    (:meth:`text`, :meth:`call`, :meth:`finish`...) when something else decides what goes out
    (the healing session does). ``usage`` says whether the usage chunk is sent;
    ``reasoning_field`` is the delta key reasoning goes out under (``reasoning_content``, as
    vLLM, LM Studio, xAI and DeepSeek send it; ``reasoning`` for OpenRouter's clients).
    """

    #: The finish for a cut at the output-token limit.
    LENGTH: ClassVar[str] = "length"
    #: The finish of a turn that ends with calls to run.
    CALLS: ClassVar[str] = "tool_calls"

    __slots__ = (
        "_created",
        "_model",
        "_response_id",
        "reasoning_field",
        "send_usage",
    )

    def __init__(
        self,
        *,
        usage: bool = True,
        created: int | None = None,
        reasoning_field: str = "reasoning_content",
    ) -> None:
        super().__init__()
        self.send_usage = usage
        self.reasoning_field = reasoning_field
        self._created = int(time.time()) if created is None else created
        self._response_id: str | None = None
        self._model: str | None = None

    # -- what has gone out -------------------------------------------------------------------

    @property
    def response_id(self) -> str | None:
        """The id every chunk carries (the first response's)."""
        return self._response_id

    @property
    def model(self) -> str | None:
        """The model every chunk names (the first response's)."""
        return self._model

    @property
    def created(self) -> int:
        """The ``created`` timestamp every chunk carries."""
        return self._created

    # -- building blocks ---------------------------------------------------------------------

    def _chunk(self, delta: dict[str, Any], finish_reason: str | None = None) -> Chunk:
        return {
            "id": self._response_id or "chatcmpl-toolwire",
            "object": "chat.completion.chunk",
            "created": self._created,
            "model": self._model or "",
            "choices": [
                {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
            ],
        }

    def _opened(self) -> list[WireItem]:
        return [self._chunk({"role": "assistant", "content": None})]

    def info(self, event: ResponseInfo) -> list[WireItem]:
        """The response is known: take its id and model and open the message.

        Only before anything went out: every chunk of one client response carries one id (a
        retry's response has its own id, which the client never sees).
        """
        if not self._started:
            self._response_id = event.response_id
            self._model = event.model
        out: list[WireItem] = []
        self._opening(out)
        return out

    def text(self, text: str) -> list[WireItem]:
        """A piece of the visible answer, at once."""
        out: list[WireItem] = []
        self._opening(out)
        out.append(self._chunk({"content": text}))
        return out

    def reasoning(self, text: str) -> list[WireItem]:
        """A piece of reasoning, at once."""
        out: list[WireItem] = []
        self._opening(out)
        out.append(self._chunk({self.reasoning_field: text}))
        return out

    def call(self, event: ToolCallReady | ToolCallRepaired) -> list[WireItem]:
        """One accepted call, whole, at the next client index."""
        out: list[WireItem] = []
        self._opening(out)
        call = event.call
        call_id = self._ids.claim(call.call_id)
        fragment = {
            "index": self._calls_sent,
            "id": call_id,
            "type": "function",
            "function": {"name": call.name, "arguments": call_arguments(event)},
        }
        self._calls_sent += 1
        out.append(self._chunk({"tool_calls": [fragment]}))
        return out

    def usage(self, event: Usage) -> None:
        """Count a usage report; it goes out with :meth:`end`."""
        self._usage = add_usage(self._usage, event)

    def finish(self, reason: str) -> list[WireItem]:
        """The finish chunk with ``reason`` as the client's ``finish_reason``."""
        out: list[WireItem] = []
        self._opening(out)
        self._finished = True
        out.append(self._chunk({}, reason))
        return out

    def end(self) -> list[WireItem]:
        """The usage chunk (when sent and known), then the end marker; nothing after an error."""
        out: list[WireItem] = []
        if self._failed:
            return out
        if self.send_usage and self._usage is not None:
            out.append(
                {
                    "id": self._response_id or "chatcmpl-toolwire",
                    "object": "chat.completion.chunk",
                    "created": self._created,
                    "model": self._model or "",
                    "choices": [],
                    "usage": usage_object(self._usage),
                }
            )
        out.append(DONE)
        return out

    def error(self, error: dict[str, Any]) -> list[WireItem]:
        """An in-band error (``{"error": {...}}``): the openai SDK raises ``APIError`` on it.

        It is the last thing sent: OpenAI ends a stream with its error, with no ``[DONE]``.
        """
        self._failed = True
        return [{"error": error}]

    # -- the format's words -------------------------------------------------------------------

    def client_finish_reason(self, finish: Finish, *, calls_sent: bool) -> str:
        """The ``finish_reason`` a client receives for ``finish`` (see the module docstring)."""
        return client_finish_reason(finish, calls_sent=calls_sent)

    def upstream_error(self, error: ProviderError) -> dict[str, Any]:
        """The ``error`` object for a server's fatal error (:func:`upstream_error_object`)."""
        return upstream_error_object(error)

    def heal_failed(
        self, message: str, code: str, *, status: int = 502, upstream: bool = False
    ) -> dict[str, Any]:
        """The ``error`` object of an exchange toolwire ends: OpenAI's shape, toolwire's type,
        and the usage spent as ``usage`` (the SDK keeps the object as ``APIError.body``)."""
        error: dict[str, Any] = {
            "message": message,
            "type": failure_type(upstream),
            "param": None,
            "code": code,
        }
        if self._usage is not None:
            error["usage"] = usage_object(self._usage)
        return error

    # -- a plain re-encoding -----------------------------------------------------------------

    def feed(self, event: Event) -> list[WireItem]:
        """What ``event`` of a judged stream puts on the wire (see the module docstring).

        A rejected call, the events of calls still being judged, and anything unknown put
        nothing. A fatal provider error becomes an in-band error; a stream that dropped gets
        neither a finish nor the end marker, as it had none; a stream that finished gets the
        end marker even when the server left it out.
        """
        return re_encode(self, event)


def upstream_error_object(error: ProviderError) -> dict[str, Any]:
    """The ``error`` object to send for a fatal provider error.

    An in-band error payload from the server goes out as the server wrote it, when its text is
    whole; anything else (a body that is no stream, an empty body) is described in toolwire's
    words, its kind as the ``code``.
    """
    inner = error_payload(error).get("error")
    if isinstance(inner, dict):
        return inner
    if isinstance(inner, str):
        return {"message": inner, "type": None, "param": None, "code": error.code}
    return {
        "message": error.message,
        "type": "toolwire_upstream_error" if error.kind != "error_payload" else None,
        "param": None,
        "code": error.code or error.kind,
    }


def encode_events(events: Iterable[Event], **options: Any) -> bytes:
    """Re-encode a whole judged stream as an SSE body (``options`` go to the encoder)."""
    encoder = ChatChunkEncoder(**options)
    return sse_frame(item for event in events for item in encoder.feed(event))


if TYPE_CHECKING:
    _encoder: HealEncoder = ChatChunkEncoder()
