"""Judged events back into OpenAI Responses stream events: the Responses mapper, run backwards.

:class:`ResponsesEventEncoder` writes one client response as Responses stream events (plain
dicts, each with the next ``sequence_number``, framed by
:func:`~toolwire.adapters.encoding.named_sse_frame`);
:data:`~toolwire.adapters.openai_responses.healing.RESPONSES` binds it with the requests and
whole bodies of ``POST /v1/responses``. What a client can rely on, beyond the contract every
healing encoder keeps (:mod:`toolwire.adapters.openai_chat.encoder` states it):

- ``response.created`` and ``response.in_progress`` go out as soon as the response is known,
  with the first upstream response's id and model and the request's parameters (``tools``,
  ``tool_choice``, ``max_output_tokens``...) echoed, as the API echoes them.
- Output items are numbered 0, 1, 2... in the order they go out. Text goes out at once as
  ``response.output_text.delta`` pieces of an open ``message`` item; an accepted call goes out
  whole as a ``function_call`` item (added with ``arguments: ""``, ONE arguments delta: byte
  for byte when ``ok``, compact JSON when repaired; ``.done``; the finished item), which
  closes the item before it. Text after a call opens a new ``message`` item.
- The finish is the terminal event: ``response.completed``, or ``response.incomplete`` with
  ``incomplete_details.reason``: ``max_output_tokens`` for a cut at the token limit (even when
  the server called the response complete), else the server's own reason. Responses has no
  finish for calls: a turn with calls to run completes (``CALLS`` is ``completed``) and the
  client finds them in ``output``. The terminal event carries the whole response: every item
  sent, and the usage (the sum over the exchange). Nothing follows it (no ``[DONE]``).
- An error is an ``error`` event, last, its object both nested under ``error`` (as OpenAI
  sends it now: the ``openai`` SDK raises ``APIError`` on it) and flat (``code``,
  ``message``, ``param``, the documented ``ResponseErrorEvent``).

Ids: what a client may send back. Clients replay ``output`` into their next ``input`` (OpenAI's
function-calling guide does), and the API looks some item ids up: a ``function_call`` item id
sent without the reasoning item it was generated with is refused ("provided without its
required 'reasoning' item"), and so is an id it cannot find ("Item with id ... not found").
toolwire's events do not carry the upstream's item ids, so a ``function_call`` item has no
``id`` (the field is optional: ``call_id`` pairs a call with its output; its argument events
name it by ``call_id``), and a ``message`` item has toolwire's (``msg_`` + 32 hex), because the
SDK tells messages apart by id (clients report the API accepting made-up ``msg_`` ids inline).
``call_id`` is the model's, unique in the response: an id another response of the healed turn
used gets ``~h2``, ``~h3``... A whole (non-streamed) body keeps more: every item the first
body holds as sent goes back in its own form (see :meth:`ResponsesWireFormat.healed_body`).

Reasoning. toolwire reads reasoning summary text and ``reasoning_text`` as reasoning pieces,
and a reasoning item's ``id`` and ``encrypted_content`` only in ``ProviderContent`` at the end
of the response, which the session does not pass to an encoder. A reasoning item written from
the text alone would carry an id of toolwire's, which the API looks up and refuses when the
client replays it. So by default reasoning is not streamed (its tokens still count in
``usage.output_tokens_details.reasoning_tokens``); a client that shows reasoning and never
sends ``output`` back asks for it with ``reasoning="summary_text"`` (or ``"reasoning_text"``,
the form local servers stream raw reasoning in).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Final, Literal, NamedTuple

import msgspec

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
from ..encoding import (
    EncoderState,
    add_usage,
    call_arguments,
    error_payload,
    failure_type,
    re_encode,
)

if TYPE_CHECKING:
    from ...core.wire import HealEncoder

__all__ = ["TERMINALS", "WRITTEN", "ReasoningPart", "ResponsesEventEncoder"]

#: The part reasoning goes out as, when it goes out (see the module docstring).
ReasoningPart = Literal["summary_text", "reasoning_text"]

_decode = msgspec.json.decode
#: The events that end a response.
TERMINALS = ("response.completed", "response.incomplete")
#: Request parameters a response object echoes, as the API does; the SDK needs the last three.
_ECHOED = (
    "instructions",
    "max_output_tokens",
    "max_tool_calls",
    "metadata",
    "reasoning",
    "store",
    "temperature",
    "text",
    "top_logprobs",
    "top_p",
    "truncation",
    "user",
    "parallel_tool_calls",
    "tool_choice",
    "tools",
)
_ECHO_DEFAULTS: Final[dict[str, Any]] = {
    "parallel_tool_calls": True,
    "tool_choice": "auto",
    "tools": [],
}
#: The item types the encoder writes itself; any other item of a body is opaque to it.
WRITTEN = ("message", "function_call")


class _Form(NamedTuple):
    """How one kind of text part streams: its item, its part events, its text events."""

    item_type: str
    id_prefix: str
    part_type: str
    #: ``content`` or ``summary``: the item field holding the part, and its index key.
    field: str
    index_key: str
    part_event: str
    text_event: str


_FORMS: Final[dict[str, _Form]] = {
    "output_text": _Form(
        "message",
        "msg",
        "output_text",
        "content",
        "content_index",
        "response.content_part",
        "response.output_text",
    ),
    "summary_text": _Form(
        "reasoning",
        "rs",
        "summary_text",
        "summary",
        "summary_index",
        "response.reasoning_summary_part",
        "response.reasoning_summary_text",
    ),
    "reasoning_text": _Form(
        "reasoning",
        "rs",
        "reasoning_text",
        "content",
        "content_index",
        "response.content_part",
        "response.reasoning_text",
    ),
}


class _OpenItem:
    """The message or reasoning item being written: its place, id and text so far."""

    __slots__ = ("form", "index", "item_id", "pieces")

    def __init__(self, form: _Form, index: int) -> None:
        self.form = form
        self.index = index
        self.item_id = f"{form.id_prefix}_{uuid.uuid4().hex}"
        self.pieces: list[str] = []

    def part(self, text: str) -> dict[str, Any]:
        if self.form.item_type == "message":
            return {"type": "output_text", "annotations": [], "logprobs": [], "text": text}
        return {"type": self.form.part_type, "text": text}

    def item(self, parts: list[dict[str, Any]], status: str) -> dict[str, Any]:
        if self.form.item_type == "message":
            return {
                "id": self.item_id,
                "type": "message",
                "status": status,
                "content": parts,
                "role": "assistant",
            }
        item: dict[str, Any] = {"id": self.item_id, "type": "reasoning", "summary": []}
        item[self.form.field] = parts
        return item

    def where(self) -> dict[str, Any]:
        return {"item_id": self.item_id, "output_index": self.index, self.form.index_key: 0}

    def logprobs(self) -> dict[str, Any]:
        """Output text events carry ``logprobs`` (the SDK reads the field); others have none."""
        return {"logprobs": []} if self.form.item_type == "message" else {}


class ResponsesEventEncoder(EncoderState):
    """Writes one Responses response, event by event, for one client. Sans-I/O, not reusable.

    ``request`` is the body that went upstream (its parameters are echoed in the response
    object); ``reasoning`` the part reasoning goes out as, or ``None`` to leave it out (the
    default, see the module docstring). Use :meth:`feed` for a plain re-encoding of one judged
    stream, or the building blocks when the healing session decides.
    """

    #: The client's finish for a cut at the output-token limit: ``incomplete_details.reason``.
    LENGTH: ClassVar[str] = "max_output_tokens"
    #: The client's finish for a turn that ends with calls to run: ``response.completed``.
    CALLS: ClassVar[str] = "completed"

    __slots__ = (
        "_created_at",
        "_echo",
        "_model",
        "_open",
        "_output",
        "_response_id",
        "_sequence",
        "reasoning_part",
    )

    def __init__(
        self,
        request: Mapping[str, Any] | None = None,
        *,
        reasoning: ReasoningPart | None = None,
        created_at: int | None = None,
    ) -> None:
        super().__init__()
        body = request or {}
        self.reasoning_part = reasoning
        self._echo = {**_ECHO_DEFAULTS, **{key: body[key] for key in _ECHOED if key in body}}
        model = body.get("model")
        self._model = model if isinstance(model, str) else ""
        self._response_id = f"resp_{uuid.uuid4().hex}"
        self._created_at = int(time.time()) if created_at is None else created_at
        self._sequence = 0
        self._output: list[dict[str, Any]] = []
        self._open: _OpenItem | None = None

    @property
    def response_id(self) -> str:
        """The id the response carries (the first upstream response's, or toolwire's)."""
        return self._response_id

    # -- events and items --------------------------------------------------------------------

    def _event(self, kind: str, **fields: Any) -> dict[str, Any]:
        event = {"type": kind, "sequence_number": self._sequence, **fields}
        self._sequence += 1
        return event

    def _response(
        self, status: str, details: dict[str, Any] | None = None, usage: Usage | None = None
    ) -> dict[str, Any]:
        return {
            "id": self._response_id,
            "object": "response",
            "created_at": self._created_at,
            "status": status,
            "error": None,
            "incomplete_details": details,
            **self._echo,
            "model": self._model,
            "output": list(self._output) if status != "in_progress" else [],
            "usage": _usage_object(usage),
        }

    def _opened(self) -> list[WireItem]:
        return [
            self._event("response.created", response=self._response("in_progress")),
            self._event("response.in_progress", response=self._response("in_progress")),
        ]

    def _close(self, out: list[WireItem]) -> None:
        item = self._open
        if item is None:
            return
        self._open = None
        form, text = item.form, "".join(item.pieces)
        done = item.item([item.part(text)], "completed")
        where = item.where()
        out.append(self._event(f"{form.text_event}.done", **where, text=text, **item.logprobs()))
        out.append(self._event(f"{form.part_event}.done", **where, part=item.part(text)))
        out.append(self._event("response.output_item.done", output_index=item.index, item=done))
        self._output.append(done)

    def _piece(self, part_type: str, text: str) -> list[WireItem]:
        out: list[WireItem] = []
        self._opening(out)
        item = self._open
        if item is None or item.form.part_type != part_type:
            self._close(out)
            item = self._open = _OpenItem(_FORMS[part_type], len(self._output))
            added = item.item([], "in_progress")
            out.append(
                self._event("response.output_item.added", output_index=item.index, item=added)
            )
            out.append(
                self._event(f"{item.form.part_event}.added", **item.where(), part=item.part(""))
            )
        delta = self._event(
            f"{item.form.text_event}.delta", **item.where(), delta=text, **item.logprobs()
        )
        out.append(delta)
        item.pieces.append(text)
        return out

    # -- the building blocks -----------------------------------------------------------------

    def info(self, event: ResponseInfo) -> list[WireItem]:
        """The response is known: take its id and model (only before anything went out)."""
        if not self._started:
            self._response_id = event.response_id or self._response_id
            self._model = event.model or self._model
        out: list[WireItem] = []
        self._opening(out)
        return out

    def text(self, text: str) -> list[WireItem]:
        """A piece of the visible answer, at once, in the open ``message`` item."""
        return self._piece("output_text", text) if text else []

    def reasoning(self, text: str) -> list[WireItem]:
        """A piece of reasoning: at once in the open reasoning item, or not at all (default)."""
        if self.reasoning_part is None or not text:
            return []
        return self._piece(self.reasoning_part, text)

    def call(self, event: ToolCallReady | ToolCallRepaired) -> list[WireItem]:
        """One accepted call, whole: a ``function_call`` item with its arguments in one delta."""
        out: list[WireItem] = []
        self._opening(out)
        self._close(out)
        call_id = self._ids.claim(event.call.call_id)
        arguments = call_arguments(event)
        index = len(self._output)
        where = {"item_id": call_id, "output_index": index}
        item = {
            "type": "function_call",
            "status": "in_progress",
            "arguments": "",
            "call_id": call_id,
            "name": event.call.name,
        }
        done = {**item, "status": "completed", "arguments": arguments}
        out.append(self._event("response.output_item.added", output_index=index, item=item))
        out.append(self._event("response.function_call_arguments.delta", **where, delta=arguments))
        out.append(
            self._event("response.function_call_arguments.done", **where, arguments=arguments)
        )
        out.append(self._event("response.output_item.done", output_index=index, item=done))
        self._output.append(done)
        self._calls_sent += 1
        return out

    def usage(self, event: Usage) -> None:
        """Count a usage report (they add up); it goes out with the terminal event."""
        self._usage = add_usage(self._usage, event)

    def finish(self, reason: str) -> list[WireItem]:
        """Close the open item; the terminal event for ``reason`` (see the module docstring).

        ``completed`` is ``response.completed``; any other reason is ``response.incomplete``
        with that ``incomplete_details.reason`` (``incomplete``: a server that gave none).
        """
        out: list[WireItem] = []
        self._opening(out)
        self._close(out)
        self._finished = True
        if reason == self.CALLS:
            response = self._response("completed", usage=self._usage)
            out.append(self._event("response.completed", response=response))
        else:
            details = None if reason == "incomplete" else {"reason": reason}
            response = self._response("incomplete", details, self._usage)
            out.append(self._event("response.incomplete", response=response))
        return out

    def end(self) -> list[WireItem]:
        """Nothing: the terminal event ends a Responses stream (there is no ``[DONE]``)."""
        return []

    def error(self, error: dict[str, Any]) -> list[WireItem]:
        """An ``error`` event carrying ``error``, nested and flat; the last thing sent."""
        self._failed = True
        flat = {key: error.get(key) for key in ("code", "message", "param")}
        return [self._event("error", **flat, error=error)]

    def client_finish_reason(self, finish: Finish, *, calls_sent: bool) -> str:
        """``max_output_tokens`` for a cut at the token limit, else the server's own finish.

        ``calls_sent`` changes nothing: a Responses turn with calls completes like any other.
        """
        if finish.cut_by == "token_limit":
            return self.LENGTH
        return finish.raw or self.CALLS

    def upstream_error(self, error: ProviderError) -> dict[str, Any]:
        """The server's own error object when its payload is whole, else toolwire's words.

        The payload is an ``error`` event (the object nested under ``error``, or flat) or a
        ``response.failed`` (its ``response.error``).
        """
        payload = error_payload(error)
        nested = payload.get("error")
        if isinstance(nested, dict) and isinstance(nested.get("message"), str):
            return nested
        if payload.get("type") == "error" and isinstance(payload.get("message"), str):
            return {"type": None, **{key: payload.get(key) for key in ("code", "message", "param")}}
        response = payload.get("response")
        failed = response.get("error") if isinstance(response, dict) else None
        if isinstance(failed, dict) and isinstance(failed.get("message"), str):
            return {
                "type": None,
                "code": failed.get("code"),
                "message": failed["message"],
                "param": None,
            }
        return {
            "type": "toolwire_upstream_error" if error.kind != "error_payload" else None,
            "code": error.code or error.kind,
            "message": error.message,
            "param": None,
        }

    def heal_failed(
        self, message: str, code: str, *, status: int = 502, upstream: bool = False
    ) -> dict[str, Any]:
        """The error object of an exchange toolwire ends (``type: toolwire_heal_failed``, or
        ``toolwire_upstream_error``), with the usage spent as ``usage`` in the Responses shape."""
        error: dict[str, Any] = {
            "type": failure_type(upstream),
            "code": code,
            "message": message,
            "param": None,
        }
        usage = _usage_object(self._usage)
        if usage is not None:
            error["usage"] = usage
        return error

    # -- a plain re-encoding -----------------------------------------------------------------

    def feed(self, event: Event) -> list[WireItem]:
        """What ``event`` of a judged stream puts on the wire, with no healing
        (:func:`~toolwire.adapters.encoding.re_encode`); nothing after an error."""
        return [] if self._failed else re_encode(self, event)


def _usage_object(usage: Usage | None) -> dict[str, Any] | None:
    """``usage`` in the Responses shape. Cached-token details are not known to toolwire."""
    if usage is None:
        return None
    total = usage.total_tokens
    if total is None and usage.input_tokens is not None and usage.output_tokens is not None:
        total = usage.input_tokens + usage.output_tokens
    body: dict[str, Any] = {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
    }
    if usage.reasoning_tokens is not None:
        body["output_tokens_details"] = {"reasoning_tokens": usage.reasoning_tokens}
    body["total_tokens"] = total
    return body


if TYPE_CHECKING:
    _encoder: HealEncoder = ResponsesEventEncoder()
