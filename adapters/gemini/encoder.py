"""Judged events back into Gemini ``GenerateContentResponse`` chunks: the Gemini mapper, run
backwards.

:class:`GeminiChunkEncoder` writes one client response as the chunks of
``streamGenerateContent`` (plain dicts in the REST spelling, camelCase), framed as server-sent
events (``alt=sse``) or as the JSON array the endpoint streams without it;
:mod:`toolwire.adapters.gemini.healing` binds it with the requests and whole bodies of the
Gemini API and Vertex AI. What a client can rely on, beyond the contract every healing encoder
keeps (:mod:`toolwire.adapters.openai_chat.encoder` states it):

- Every chunk has one candidate (index 0) of role ``model`` with one part, and the first
  response's ``modelVersion`` and ``responseId``. Text goes out at once as a ``text`` part,
  reasoning as a ``text`` part with ``thought: true``.
- An accepted call goes out whole as one ``functionCall`` part, ``args`` an object (what the
  API sends; the repaired object when repaired), with its ``id`` when the server gave one
  (``~h2`` for an id the response already used). A Vertex call streamed as ``partialArgs``
  goes out the same way, whole, once judged.
- Signatures. Gemini 3 refuses a history whose first ``functionCall`` part lost its
  ``thoughtSignature``, and the signatures reach toolwire's events only in the turn's
  ``ProviderContent``, before the finish. So calls are held until it comes (or the finish, when
  nothing was signed), and go out then with their signatures, in order; text and reasoning
  that follow a held call wait behind it, so that the parts keep their order. A signature the
  stream carried on a text or thought part (already sent) goes out on an empty part of the
  same kind where that part ended (Google validates only the calls' signatures; the others
  are returned so that the model keeps its thought context).
- The finish is ``MAX_TOKENS`` for a cut at the token limit, else the server's
  ``finishReason`` (``STOP`` when it gave none). ``usageMetadata`` goes out with the finish:
  ``candidatesTokenCount`` without the thoughts, as the API counts it.
- An error is ``{"error": {"code", "message", "status"}}``, last: the google-genai SDK raises
  ``ClientError`` / ``ServerError`` (by ``code``) on it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Final

import msgspec

from ...core.events import (
    Event,
    Finish,
    ProviderContent,
    ProviderError,
    ResponseInfo,
    ToolCallReady,
    ToolCallRepaired,
    Usage,
)
from ...core.wire import Done, WireItem
from ..encoding import EncoderState, call_arguments_object, error_payload, re_encode
from .finish import MAX_TOKENS
from .replay import ReplayPart

if TYPE_CHECKING:
    from ...core.wire import HealEncoder

__all__ = ["ARRAY_CLOSE", "ARRAY_NEXT", "ARRAY_OPEN", "ArrayMark", "GeminiChunkEncoder"]

#: The ``status`` of an error toolwire writes when healing fails.
HEAL_FAILED_STATUS = "TOOLWIRE_HEAL_FAILED"
#: The ``status`` of an error toolwire writes when the network failed the exchange.
UPSTREAM_ERROR_STATUS = "TOOLWIRE_UPSTREAM_ERROR"


class ArrayMark(Done):
    """The punctuation of a JSON-array stream (``[``, ``,``, ``]``), written by the encoder, which
    knows which chunk is the first: the framing stays a function of the items alone."""

    __slots__ = ("text",)

    def __init__(self, text: bytes) -> None:
        self.text = text

    def __repr__(self) -> str:
        return f"ArrayMark({self.text!r})"


#: Before the first chunk, between two chunks, after the last one.
ARRAY_OPEN: Final = ArrayMark(b"[")
ARRAY_NEXT: Final = ArrayMark(b"\n,\r\n")
ARRAY_CLOSE: Final = ArrayMark(b"\n]")

_Held = tuple[str, Any]


class GeminiChunkEncoder(EncoderState):
    """Writes one Gemini response, chunk by chunk, for one client. Sans-I/O, not reusable.

    ``array``: the chunks go out as the elements of one JSON array (``streamGenerateContent``
    without ``alt=sse``), with :class:`ArrayMark` punctuation between them.
    """

    #: The client's finish for a cut at the output-token limit.
    LENGTH: ClassVar[str] = MAX_TOKENS
    #: Gemini's finish for a turn that ends with calls (the API says ``STOP``).
    CALLS: ClassVar[str] = "STOP"

    __slots__ = ("_array", "_chunks", "_content_seen", "_held", "_model", "_response_id",
                 "_signatures", "_text_signatures")  # fmt: skip

    def __init__(self, *, array: bool = False) -> None:
        super().__init__()
        self._array = array
        self._chunks = 0
        self._model: str | None = None
        self._response_id: str | None = None
        #: Whether this response's ``ProviderContent`` came (calls need wait no more).
        self._content_seen = False
        #: What waits behind a call held for its signature: ("call", event), ("text", str)...
        self._held: list[_Held] = []
        self._signatures: dict[str, str] = {}
        #: Signed text parts, by the call they follow (``None``: before any call).
        self._text_signatures: dict[str | None, list[ReplayPart]] = {}

    # -- chunks ------------------------------------------------------------------------------

    def _opened(self) -> list[WireItem]:
        return []  # Gemini has no opening event

    def _chunk(
        self, parts: list[dict[str, Any]], *, finish: str | None = None, usage: bool = False
    ) -> list[WireItem]:
        candidate: dict[str, Any] = {}
        if parts:
            candidate["content"] = {"role": "model", "parts": parts}
        if finish is not None:
            candidate["finishReason"] = finish
        candidate["index"] = 0
        chunk: dict[str, Any] = {"candidates": [candidate]}
        if usage and self._usage is not None:
            chunk["usageMetadata"] = _usage_metadata(self._usage)
        return self._element(chunk)

    def _element(self, chunk: dict[str, Any]) -> list[WireItem]:
        """One element of the stream (an SSE event, or an array element with its mark)."""
        if self._model is not None:
            chunk["modelVersion"] = self._model
        if self._response_id is not None:
            chunk["responseId"] = self._response_id
        out: list[WireItem] = []
        if self._array:
            out.append(ARRAY_NEXT if self._chunks else ARRAY_OPEN)
        self._chunks += 1
        out.append(chunk)
        return out

    def info(self, event: ResponseInfo) -> list[WireItem]:
        """A response is known: take its model and id (only before anything went out), and
        wait for its own signatures (a retry's calls are signed by the retry's content)."""
        if not self._started:
            self._model = event.model
            self._response_id = event.response_id
        self._content_seen = False
        self._signatures.clear()
        self._text_signatures.clear()
        out: list[WireItem] = []
        self._opening(out)
        return out

    def text(self, text: str) -> list[WireItem]:
        """A piece of the visible answer, at once (unless a held call is before it)."""
        return self._piece("text", text) if text else []

    def reasoning(self, text: str) -> list[WireItem]:
        """A piece of reasoning, at once, as a ``thought`` part (same rule as :meth:`text`)."""
        return self._piece("thought", text) if text else []

    def _piece(self, kind: str, text: str) -> list[WireItem]:
        out: list[WireItem] = []
        self._opening(out)
        if self._held:
            self._held.append((kind, text))
            return out
        out += self._chunk([_text_part(text, kind == "thought")])
        return out

    def call(self, event: ToolCallReady | ToolCallRepaired) -> list[WireItem]:
        """One accepted call, whole; held until the response's signatures are known."""
        out: list[WireItem] = []
        self._opening(out)
        self._calls_sent += 1
        self._held.append(("call", event))
        if self._content_seen:
            out += self._release()
        return out

    def provider_content(self, event: ProviderContent) -> list[WireItem]:
        """The response's parts with their signatures: the held calls go out, signed."""
        try:
            parts = msgspec.convert(event.items, tuple[ReplayPart, ...])
        except msgspec.ValidationError:
            parts = ()  # another provider's content: nothing signed here
        after: str | None = None
        for part in parts:
            if part.kind == "call":
                after = part.call_id
                if part.call_id is not None and part.signature is not None:
                    self._signatures[part.call_id] = part.signature
            elif part.signature is not None:
                self._text_signatures.setdefault(after, []).append(part)
        self._content_seen = True
        out: list[WireItem] = []
        self._opening(out)
        out += self._signed_texts(None)
        out += self._release()
        return out

    def _signed_texts(self, after: str | None) -> list[WireItem]:
        out: list[WireItem] = []
        for part in self._text_signatures.pop(after, ()):
            signed = _text_part("", part.kind == "reasoning")
            signed["thoughtSignature"] = part.signature
            out += self._chunk([signed])
        return out

    def _release(self) -> list[WireItem]:
        """Everything held, in order: calls with their signatures, then what followed them."""
        out: list[WireItem] = []
        held, self._held = self._held, []
        for kind, value in held:
            if kind == "call":
                out += self._chunk([self._call_part(value)])
                out += self._signed_texts(value.call.call_id)
            else:
                out += self._chunk([_text_part(value, kind == "thought")])
        return out

    def _call_part(self, event: ToolCallReady | ToolCallRepaired) -> dict[str, Any]:
        call = event.call
        function: dict[str, Any] = {"name": call.name, "args": call_arguments_object(event)}
        if not call.id_synthesized:
            function["id"] = self._ids.claim(call.call_id)
        part: dict[str, Any] = {"functionCall": function}
        signature = self._signatures.get(call.call_id)
        if signature is not None:
            part["thoughtSignature"] = signature
        return part

    # -- the end -----------------------------------------------------------------------------

    def usage(self, event: Usage) -> None:
        """Take a usage report: Gemini's are cumulative, so the last one counts."""
        self._usage = event

    def finish(self, reason: str) -> list[WireItem]:
        """What was held, then a chunk with ``finishReason`` and ``usageMetadata``."""
        out: list[WireItem] = []
        self._opening(out)
        out += self._release()
        self._finished = True
        out += self._chunk([], finish=reason, usage=True)
        return out

    def end(self) -> list[WireItem]:
        """Nothing for SSE (Gemini has no end marker); the array's ``]``. Nothing after an error."""
        if self._failed or not self._array:
            return []
        return [ARRAY_OPEN, ARRAY_CLOSE] if not self._chunks else [ARRAY_CLOSE]

    def error(self, error: dict[str, Any]) -> list[WireItem]:
        """``{"error": error}``, after the calls held (they were accepted: the client's); an
        error toolwire writes itself carries the usage spent beside it, as ``usageMetadata``
        (google-genai keeps the whole element as ``APIError.details``)."""
        out = self._release()
        self._failed = True
        element: dict[str, Any] = {"error": error}
        if self._usage is not None and error.get("status") in _TOOLWIRE_STATUSES:
            element["usageMetadata"] = _usage_metadata(self._usage)
        out += self._element(element)
        if self._array:
            out.append(ARRAY_CLOSE)
        return out

    def client_finish_reason(self, finish: Finish, *, calls_sent: bool) -> str:
        """``MAX_TOKENS`` for a cut at the token limit, else the server's (``STOP`` if none)."""
        if finish.cut_by == "token_limit":
            return self.LENGTH
        return finish.raw if finish.raw is not None else self.CALLS

    def upstream_error(self, error: ProviderError) -> dict[str, Any]:
        """The server's ``error`` object when its payload is whole, else toolwire's words.

        ``code`` is always a number: the SDK picks ``ClientError`` / ``ServerError`` by it.
        """
        inner = error_payload(error).get("error")
        if isinstance(inner, dict) and isinstance(inner.get("code"), int):
            return inner
        status = error.code if error.code and not error.code.isdigit() else "INTERNAL"
        code = int(error.code) if error.code and error.code.isdigit() else 500
        return {"code": code, "message": error.message, "status": status}

    def heal_failed(
        self, message: str, code: str, *, status: int = 502, upstream: bool = False
    ) -> dict[str, Any]:
        """The error object of an exchange toolwire ends: Google's shape, toolwire's status
        (``TOOLWIRE_HEAL_FAILED``, or ``TOOLWIRE_UPSTREAM_ERROR`` when the network failed it).

        ``code`` is ``status`` (502, 504 for a stall: the SDK raises ``ServerError``); toolwire's
        own code (``tool_call_rejected``, ``retry_http_status``, ``upstream_dropped``...) is the
        ``reason`` of an ``ErrorInfo`` detail, as Google writes machine-readable reasons.
        """
        detail = {
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": code,
            "domain": "toolwire",
        }
        kind = UPSTREAM_ERROR_STATUS if upstream else HEAL_FAILED_STATUS
        return {"code": status, "message": message, "status": kind, "details": [detail]}

    # -- a plain re-encoding -----------------------------------------------------------------

    def feed(self, event: Event) -> list[WireItem]:
        """What ``event`` of a judged stream puts on the wire, with no healing
        (:func:`~toolwire.adapters.encoding.re_encode`)."""
        return re_encode(self, event)


_TOOLWIRE_STATUSES = frozenset({HEAL_FAILED_STATUS, UPSTREAM_ERROR_STATUS})


def _text_part(text: str, thought: bool) -> dict[str, Any]:
    return {"text": text, "thought": True} if thought else {"text": text}


def _usage_metadata(usage: Usage) -> dict[str, Any]:
    """``usageMetadata``: ``candidatesTokenCount`` excludes the thoughts (the mapper adds them)."""
    body: dict[str, Any] = {}
    if usage.input_tokens is not None:
        body["promptTokenCount"] = usage.input_tokens
    if usage.output_tokens is not None:
        body["candidatesTokenCount"] = usage.output_tokens - (usage.reasoning_tokens or 0)
    if usage.total_tokens is not None:
        body["totalTokenCount"] = usage.total_tokens
    if usage.reasoning_tokens is not None:
        body["thoughtsTokenCount"] = usage.reasoning_tokens
    return body


if TYPE_CHECKING:
    _encoder: HealEncoder = GeminiChunkEncoder()
