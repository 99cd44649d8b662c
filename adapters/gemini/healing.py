"""Gemini API and Vertex AI as healing wire formats: ``generateContent`` and
``streamGenerateContent`` requests and bodies.

The model is in the path (``/v1beta/models/{model}:streamGenerateContent``, Vertex's
``/v1/projects/{p}/locations/{l}/publishers/google/models/{m}:...``) and the query picks the
framing, so each endpoint is a pattern searched in ``path?query``, one format each:

- :data:`GEMINI_STREAM`: ``:streamGenerateContent?alt=sse`` (what the google-genai SDK sends),
  server-sent events;
- :data:`GEMINI_ARRAY`: ``:streamGenerateContent`` without ``alt=sse``, which streams one JSON
  array. toolwire asks the server with ``alt=sse`` (the stream it reads) and writes the
  client's array itself, element by element, as it goes;
- :data:`GEMINI_WHOLE`: ``:generateContent``, one ``GenerateContentResponse`` body.

:class:`~toolwire.adapters.gemini.encoder.GeminiChunkEncoder` says what a client receives. A
request is healed when it offers function declarations and nothing the encoder could not write
back: built-in tools (``googleSearch``, ``codeExecution``...), more than one candidate, or an
output modality other than text pass untouched.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import msgspec

from ...core.turn import Turn
from ...core.wire import Constraint, HealPlan, HealSettings, NextMessages, WireItem
from .. import encoding
from ..encoding import json_object, sse_frame
from ..repaired_requests import planned
from .constrain import constrained_gemini
from .encoder import ArrayMark, GeminiChunkEncoder
from .history import GeminiHistory, broken_calls
from .request import CONFIG_KEYS, LIMIT_KEYS

__all__ = [
    "GEMINI_ARRAY",
    "GEMINI_STREAM",
    "GEMINI_WHOLE",
    "GeminiWireFormat",
    "open_gemini_formats",
]

_encode = msgspec.json.Encoder().encode
_HISTORY = GeminiHistory()
_MODEL = r"/models/[^/?]+"
#: The keys of a tool that only declares functions (REST spelling and the SDK dump's).
_FUNCTION_TOOL_KEYS = frozenset({"functionDeclarations", "function_declarations"})
#: The keys of a part the encoder writes; a whole body with any other part is not rewritten.
_WRITTEN_PART_KEYS = frozenset({"text", "thought", "thoughtSignature", "functionCall"})


class GeminiWireFormat:
    """One Gemini endpoint's requests and bodies, for healing. Stateless; one per endpoint."""

    provider = "gemini"

    def __init__(self, path: re.Pattern[str], *, streaming: bool, array: bool = False) -> None:
        self._path = path
        self._streaming = streaming
        self._array = array

    @property
    def path(self) -> re.Pattern[str]:
        """The endpoint, searched in ``path?query`` (see the module docstring)."""
        return self._path

    def plan_request(self, content: bytes) -> HealPlan | None:
        """Heal a body with ``contents`` that offers only function declarations; it goes
        upstream as is (the array stream with ``alt=sse``; usage always comes), but for earlier
        ``functionCall`` parts whose ``args`` are no object (the API refuses the request: a
        ``google.protobuf.Struct``), written as rejected calls
        (:func:`~toolwire.adapters.repaired_requests.repaired_history`), healed or not."""
        body = json_object(content)
        if body is None or not isinstance(body.get("contents"), list):
            return None
        return planned(
            body,
            "contents",
            _HISTORY,
            broken_calls,
            heals=_heals,
            streaming=self._streaming,
            query_params=(("alt", "sse"),) if self._array else (),
            media_type="application/json; charset=UTF-8"
            if self._array
            else "text/event-stream; charset=utf-8",
        )

    def encoder(self, plan: HealPlan) -> GeminiChunkEncoder:
        """A new encoder (an array's elements when the client asked for the array stream)."""
        return GeminiChunkEncoder(array=self._array)

    def frame(self, items: Iterable[WireItem]) -> bytes:
        """``data:`` events; for the array stream, its elements and punctuation."""
        if not self._array:
            return sse_frame(items)
        out = bytearray()
        for item in items:
            out += item.text if isinstance(item, ArrayMark) else _encode(item)
        return bytes(out)

    def follow_up_body(
        self, body: Mapping[str, Any], turn: Turn, next_messages: NextMessages
    ) -> dict[str, Any]:
        """``contents`` with the model turn and one ``user`` content of function responses."""
        return encoding.follow_up_body(body, turn, next_messages, key="contents")

    def raised_limit(
        self, body: Mapping[str, Any], ceiling: int
    ) -> tuple[dict[str, Any], int | None]:
        """``generationConfig.maxOutputTokens`` doubled, up to ``ceiling``."""
        return encoding.raised_limit_in(body, ceiling, CONFIG_KEYS, LIMIT_KEYS)

    def read_body(self, content: bytes) -> dict[str, Any] | None:
        """``content`` decoded, when it is a ``GenerateContentResponse`` of parts the encoder
        writes (text, thoughts, function calls, signatures)."""
        body = json_object(content)
        if body is None or "error" in body:
            return None
        candidates = body.get("candidates", [])
        if not isinstance(candidates, list):
            return None
        for candidate in candidates:
            parts = _parts(candidate)
            if parts is None or not all(
                isinstance(part, dict) and _WRITTEN_PART_KEYS.issuperset(part) for part in parts
            ):
                return None
        return body

    def body_as_stream(self, body: Mapping[str, Any]) -> bytes:
        """The one-event stream a whole body is equivalent to."""
        return sse_frame([dict(body)])

    def healed_body(self, first: Mapping[str, Any], items: Iterable[WireItem]) -> dict[str, Any]:
        """The client's ``GenerateContentResponse``: ``first`` with the parts, finish and usage
        sent (consecutive text of one kind joined, as the API writes one part; a signature that
        went out on an empty part back on the part it belongs to). Every other field of
        ``first`` and of its candidate is kept (``safetyRatings``, ``avgLogprobs``...);
        ``finishMessage`` only while the finish is still its own."""
        parts, finish, usage = _folded(items)
        body = dict(first)
        candidates = first.get("candidates")
        base = candidates[0] if isinstance(candidates, list) and candidates else {}
        candidate = dict(base) if isinstance(base, dict) else {}
        content = candidate.get("content")
        candidate["content"] = {
            **(content if isinstance(content, dict) else {"role": "model"}),
            "parts": parts,
        }
        if finish is not None:
            if finish != candidate.get("finishReason"):
                candidate.pop("finishMessage", None)
            candidate["finishReason"] = finish
        body["candidates"] = [candidate]
        if usage is not None:
            kept = first.get("usageMetadata")
            body["usageMetadata"] = {**(kept if isinstance(kept, dict) else {}), **usage}
        return body

    def empty_body(self, items: Sequence[WireItem]) -> dict[str, Any]:
        """The first element's ``modelVersion`` and ``responseId``, with no candidate yet."""
        chunk = next((item for item in items if isinstance(item, dict)), {})
        return {key: chunk[key] for key in ("modelVersion", "responseId") if key in chunk}

    def error_body(self, items: Iterable[WireItem]) -> dict[str, Any] | None:
        """The ``{"error": {...}}`` element the items end in."""
        return encoding.error_item(items)

    def constrained(self, body: Mapping[str, Any], tool: str) -> Constraint:
        """See :func:`~toolwire.adapters.gemini.constrain.constrained_gemini`."""
        return constrained_gemini(body, tool)


def _heals(body: Mapping[str, Any]) -> bool:
    """Function declarations offered, and nothing the encoder could not write back."""
    tools = body.get("tools")
    if not isinstance(tools, list) or not tools:
        return False
    declared = False
    for tool in tools:
        if not isinstance(tool, dict) or not tool or not _FUNCTION_TOOL_KEYS.issuperset(tool):
            return False
        declared = declared or any(bool(tool[key]) for key in tool)
    config: dict[str, Any] = next(
        (body[key] for key in CONFIG_KEYS if isinstance(body.get(key), dict)), {}
    )
    count = config.get("candidateCount", config.get("candidate_count"))
    modalities = config.get("responseModalities", config.get("response_modalities"))
    return (
        declared
        and (count is None or count == 1)
        and (modalities is None or [str(m).upper() for m in modalities] == ["TEXT"])
    )


def _parts(candidate: Any) -> list[Any] | None:
    """A candidate's parts (``[]`` when it has no content), or ``None`` for another shape."""
    if not isinstance(candidate, dict):
        return None
    content = candidate.get("content")
    if content is None:
        return []
    parts = content.get("parts", []) if isinstance(content, dict) else None
    return parts if isinstance(parts, list) else None


def _folded(
    items: Iterable[WireItem],
) -> tuple[list[dict[str, Any]], str | None, dict[str, Any] | None]:
    """The parts, ``finishReason`` and ``usageMetadata`` that ``items`` stream."""
    parts: list[dict[str, Any]] = []
    finish: str | None = None
    usage: dict[str, Any] | None = None
    for item in items:
        if not isinstance(item, dict):
            continue
        for candidate in item.get("candidates") or ():
            for part in _parts(candidate) or ():
                _fold_part(parts, dict(part))
            finish = candidate.get("finishReason", finish)
        usage = item.get("usageMetadata", usage)
    return parts, finish, usage


def _fold_part(parts: list[dict[str, Any]], part: dict[str, Any]) -> None:
    """Add one streamed part: text joined to the text part of its kind before it; an empty
    signed part's signature put back on the part of its kind it belongs to (the encoder sends
    text at once, and a text part's signature only when the turn's content is known)."""
    if "functionCall" not in part and "thoughtSignature" in part and not part.get("text"):
        for earlier in reversed(parts):
            if "functionCall" in earlier:
                break
            if earlier.get("thought") == part.get("thought"):
                if "thoughtSignature" not in earlier:
                    earlier["thoughtSignature"] = part["thoughtSignature"]
                    return
                break
    last = parts[-1] if parts else None
    if (
        last is None
        or "functionCall" in part
        or "functionCall" in last
        or "thoughtSignature" in last
        or "thoughtSignature" in part
        or last.get("thought") != part.get("thought")
    ):
        parts.append(part)
    else:
        last["text"] += part["text"]


#: ``:streamGenerateContent?alt=sse``, server-sent events.
GEMINI_STREAM = GeminiWireFormat(
    re.compile(_MODEL + r":streamGenerateContent\?(?:[^#]*&)?alt=sse(?:&|#|$)"), streaming=True
)
#: ``:streamGenerateContent`` without ``alt=sse``: a JSON array (tried after the SSE one).
GEMINI_ARRAY = GeminiWireFormat(
    re.compile(_MODEL + r":streamGenerateContent(?:\?|$)"), streaming=True, array=True
)
#: ``:generateContent``, one whole body.
GEMINI_WHOLE = GeminiWireFormat(re.compile(_MODEL + r":generateContent(?:\?|$)"), streaming=False)


def open_gemini_formats(settings: HealSettings) -> tuple[GeminiWireFormat, ...]:
    """The Gemini endpoints' healing formats, in the order they are tried."""
    return (GEMINI_STREAM, GEMINI_ARRAY, GEMINI_WHOLE)
