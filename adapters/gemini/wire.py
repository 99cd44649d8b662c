"""The shapes of a ``streamGenerateContent?alt=sse`` chunk, decoded straight into msgspec Structs.

One ``GenerateContentResponse`` per ``data:`` event, in the REST spelling (camelCase). Fields
toolwire does not use (``safetyRatings``, ``citationMetadata``, ``groundingMetadata``,
``trafficType``, ``createTime``, the google-genai SDK's ``sdkHttpResponse``...) are skipped by the
decoder. What each field is for:

- ``candidates[0].content.parts``: text, thought text (``thought: true``), whole
  ``functionCall`` parts (Gemini API: ``args`` is an object), or Vertex's streamed function-call
  pieces (``streamFunctionCallArguments``: a ``{name, willContinue: true}`` header, then
  ``partialArgs`` pieces, then a piece whose ``willContinue`` is not true, often an empty
  ``functionCall: {}``); any part may carry a ``thoughtSignature``.
- ``candidates[0].finishReason`` (and ``finishMessage``): the end of the candidate.
- ``usageMetadata``: cumulative token counts, often repeated on every chunk.
- ``promptFeedback.blockReason``: the prompt itself was blocked; no candidate comes.
- ``error``: an in-band error (``{"error": {"code", "message", "status"}}``).

The google-genai SDK's objects are dumped to this spelling by :func:`sdk_payload`.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

__all__ = [
    "Candidate",
    "Chunk",
    "ErrorBody",
    "FunctionCall",
    "Part",
    "PartialArg",
    "TextChunk",
    "UsageMetadata",
    "decode_chunk",
    "decode_text_chunk",
    "sdk_payload",
]


class PartialArg(msgspec.Struct, rename="camel", gc=False):
    """One piece of a streamed function-call argument: a JSON path and exactly one value."""

    json_path: str | None = None
    string_value: str | None = None
    number_value: int | float | None = None
    bool_value: bool | None = None
    #: ``UNSET`` when absent: ``"nullValue": null`` (protobuf's JSON form of NULL_VALUE) is a
    #: value, so presence matters here, unlike for the other fields.
    null_value: str | msgspec.UnsetType | None = msgspec.UNSET
    #: A string value that goes on in the next piece for the same path.
    will_continue: bool | None = None


class FunctionCall(msgspec.Struct, rename="camel", gc=False):
    """A whole call (``name`` + ``args``), or one piece of a streamed one (Vertex)."""

    id: str | None = None
    name: str | None = None
    args: dict[str, Any] | None = None
    partial_args: list[PartialArg] | None = None
    #: More pieces of this call follow (Vertex ``streamFunctionCallArguments``).
    will_continue: bool | None = None


class Part(msgspec.Struct, rename="camel", gc=False):
    """One part of the candidate's content; other part kinds (inline data...) are skipped."""

    text: str | None = None
    thought: bool | None = None
    thought_signature: str | None = None
    function_call: FunctionCall | None = None


class Content(msgspec.Struct, rename="camel", gc=False):
    """The candidate's content: its role (``model``) and parts."""

    role: str | None = None
    parts: list[Part] | None = None


class Candidate(msgspec.Struct, rename="camel", gc=False):
    """One candidate; only candidate 0 is read."""

    content: Content | None = None
    finish_reason: str | None = None
    #: Free text the server adds to some finishes ("Malformed function call: print(...)").
    finish_message: str | None = None
    index: int | None = None


class UsageMetadata(msgspec.Struct, rename="camel", gc=False):
    """Token counts; ``candidatesTokenCount`` does not include ``thoughtsTokenCount``."""

    prompt_token_count: int | None = None
    candidates_token_count: int | None = None
    total_token_count: int | None = None
    thoughts_token_count: int | None = None


class PromptFeedback(msgspec.Struct, rename="camel", gc=False):
    """Set when the prompt itself was blocked."""

    block_reason: str | None = None
    block_reason_message: str | None = None


class ErrorBody(msgspec.Struct, rename="camel", gc=False):
    """An in-band error: ``{"code": 429, "message": ..., "status": "RESOURCE_EXHAUSTED"}``."""

    code: int | str | None = None
    message: str | None = None
    status: str | None = None


class Chunk(msgspec.Struct, rename="camel", gc=False):
    """One ``GenerateContentResponse`` of the stream."""

    candidates: list[Candidate] | None = None
    usage_metadata: UsageMetadata | None = None
    prompt_feedback: PromptFeedback | None = None
    model_version: str | None = None
    response_id: str | None = None
    error: ErrorBody | str | None = None


class TextPart(msgspec.Struct, rename="camel", gc=False):
    """A part that is answer text: not a thought, no signature, no call."""

    text: str
    thought: Literal[False] | None = None
    thought_signature: None = None
    function_call: None = None


class TextContent(msgspec.Struct, rename="camel", gc=False):
    """Content of exactly one :class:`TextPart`."""

    parts: tuple[TextPart]
    role: str | None = None


class TextCandidate(msgspec.Struct, rename="camel", gc=False):
    """Candidate 0 with its text, and no finish yet."""

    content: TextContent
    finish_reason: None = None
    finish_message: str | None = None
    index: Literal[0] | None = None


class TextChunk(msgspec.Struct, rename="camel", gc=False):
    """A chunk that is one piece of answer text (and maybe usage): most chunks of an answer.

    Every field of :class:`Chunk` (and of its candidate and part) is here, typed as there or
    narrower: one candidate (index 0) of one text part, no finish reason, no thought, no
    signature, no call, no prompt feedback, no error. So a payload that decodes as a
    ``TextChunk`` decodes as a :class:`Chunk` with the same values, and the mapper reads it as
    the general path would (:meth:`GeminiMapper.feed_bytes`); any other payload fails to
    decode. (Tuples, not lists, for the one candidate and the one part: cheaper to build.)
    """

    candidates: tuple[TextCandidate]
    usage_metadata: UsageMetadata | None = None
    prompt_feedback: None = None
    model_version: str | None = None
    response_id: str | None = None
    error: None = None


decode_chunk = msgspec.json.Decoder(Chunk).decode
decode_text_chunk = msgspec.json.Decoder(TextChunk).decode

#: URL-safe base64 (what pydantic writes for ``bytes`` in the SDK's JSON dumps) -> standard
#: base64 (what the REST API sends): the two alphabets differ in these two characters only.
_STANDARD_BASE64 = str.maketrans("-_", "+/")


def sdk_payload(chunk: object) -> Any:
    """A google-genai ``GenerateContentResponse`` (or a wire-shaped mapping) as wire JSON.

    The SDK's ``model_dump()`` uses snake_case names and ``bytes`` for ``thought_signature``;
    ``mode="json", by_alias=True`` gives the REST names, but writes the signature in URL-safe
    base64. It is turned back into the standard base64 the API sent, so that a signature read
    from SDK objects is the same string as one read from the bytes (and replays unchanged).
    """
    dump = getattr(chunk, "model_dump", None)
    if not callable(dump):
        return chunk
    try:
        payload = dump(mode="json", by_alias=True, exclude_none=True)
    except TypeError:  # a pydantic-like object without those options: take it as it is
        payload = dump()
    except ValueError:  # pydantic could not write it (nested past its depth): not wire JSON
        return chunk
    if isinstance(payload, dict):
        for candidate in payload.get("candidates") or ():
            content = candidate.get("content") if isinstance(candidate, dict) else None
            parts = content.get("parts") if isinstance(content, dict) else None
            for part in parts if isinstance(parts, list) else ():
                signature = part.get("thoughtSignature") if isinstance(part, dict) else None
                if isinstance(signature, str):
                    part["thoughtSignature"] = signature.translate(_STANDARD_BASE64)
    return payload
