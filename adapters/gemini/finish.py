"""Gemini's finish vocabulary, complete, and the one finish that is a rejected call.

``finishReason`` (``google.genai.types.FinishReason``) and ``promptFeedback.blockReason``
(``BlockedReason``) map to toolwire's typed stop reasons; the raw value is always kept in
``Finish.raw``. Only ``MAX_TOKENS`` names the output-token limit. Anything not listed (today
``UNEXPECTED_TOOL_CALL``, ``TOO_MANY_TOOL_CALLS``, ``LANGUAGE``, ``OTHER``, ``NO_IMAGE``,
``IMAGE_OTHER``, ``CONTINUATION``, ``MALFORMED_RESPONSE``, ``MISSING_THOUGHT_SIGNATURE``,
``FINISH_REASON_UNSPECIFIED``, and any value added later) is ``unknown``, never a normal end.
``MISSING_THOUGHT_SIGNATURE`` says the *request* lacked a ``thoughtSignature`` in its history
(toolwire's history writer sends them back from ``Turn.provider_content``); it is not
``error``, which toolwire keeps for a turn with an entry in ``Turn.errors``.

``MALFORMED_FUNCTION_CALL`` means the model tried to call a function and the server could not
parse the call: the chunk has no content at all (``malformed_function_call.derived.sse``, from
pydantic-ai PR #3095), sometimes a ``finishMessage`` quoting what the model wrote
("Malformed function call: print(default_api...)", googleapis/python-aiplatform#4472). It is
not a stop: the model is waiting for its call to be answered. toolwire represents it as one
call, synthesized and already rejected (:func:`malformed_call_rejection`), so that the agent
loop answers it like any rejected call (one answer per call id) and the model reads what
happened and what to do.
"""

from __future__ import annotations

import secrets

from ...core.events import StopReason, ToolCallComplete, ToolCallRejected
from ...core.mapper import cap_text
from ...core.verdict import Verdict

__all__ = [
    "MALFORMED",
    "MAX_TOKENS",
    "block_reason_from_gemini",
    "finish_reason_from_gemini",
    "malformed_call_rejection",
]

MAX_TOKENS = "MAX_TOKENS"
MALFORMED = "MALFORMED_FUNCTION_CALL"

_FINISH_REASONS: dict[str, StopReason] = {
    "STOP": "end_turn",
    MAX_TOKENS: "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
    "IMAGE_SAFETY": "content_filter",
    # The image variants of PROHIBITED_CONTENT and RECITATION (google-genai 2.x FinishReason).
    "IMAGE_PROHIBITED_CONTENT": "content_filter",
    "IMAGE_RECITATION": "content_filter",
    # google-genai 3.x: a policy layer stopped the output. ESCALATION: "filtered by an
    # escalation rule"; MODEL_ARMOR (Vertex AI): "blocked by Model Armor", as its BlockedReason
    # twin below; PUP_LIMITED_DISABLED: generation stopped because the account is limited or
    # disabled for Prohibited Use Policy violations (retrying the same request cannot help).
    "ESCALATION": "content_filter",
    "MODEL_ARMOR": "content_filter",
    "PUP_LIMITED_DISABLED": "content_filter",
    # The model called a tool; the call is the synthesized rejected one (see the docstring).
    MALFORMED: "tool_calls",
}

_BLOCK_REASONS: dict[str, StopReason] = {
    "SAFETY": "content_filter",
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "IMAGE_SAFETY": "content_filter",
    "MODEL_ARMOR": "content_filter",
    "JAILBREAK": "content_filter",
}


def finish_reason_from_gemini(raw: str) -> StopReason:
    """Normalize a ``finishReason``; unknown values are ``unknown``."""
    return _FINISH_REASONS.get(raw, "unknown")


def block_reason_from_gemini(raw: str) -> StopReason:
    """Normalize a ``promptFeedback.blockReason`` (the prompt was blocked, nothing generated)."""
    return _BLOCK_REASONS.get(raw, "unknown")


def _synthesized_id(number: int) -> str:
    """An id in toolwire's synthesized form (``toolwire-<random>-...``), unique per stream."""
    return f"toolwire-{secrets.token_hex(8)}-malformed-{number}"


def malformed_call_rejection(index: int, finish_message: str | None) -> ToolCallRejected:
    """The rejected call that stands for a ``MALFORMED_FUNCTION_CALL`` finish.

    Its name is unknown (``""``): the server sent neither a name nor arguments, so nothing is
    made up. The message says what happened, quotes the server's ``finishMessage`` when there
    is one, and asks for the call again with valid arguments.
    """
    said = cap_text(finish_message, 300) if finish_message else ""
    lines = [
        "Your function call was not run: the server could not parse it "
        f"(finish reason {MALFORMED}), so no function name or arguments were received.",
    ]
    if said:
        lines.append(f"The server said: {said}")
    lines.append(
        "Call the function again as a function call (not code), with its arguments as one "
        "valid JSON object that matches the function's parameters."
    )
    call = ToolCallComplete(
        call_id=_synthesized_id(index),
        name="",
        index=index,
        arguments_raw="",
        id_synthesized=True,
        arguments_form="object",
        closed_by="finish",
    )
    verdict = Verdict(
        outcome="rejected",
        arguments=None,
        reason="not_json",
        message="\n".join(lines),
        detail=f"finishReason {MALFORMED}" + (f": {said}" if said else ""),
    )
    return ToolCallRejected(call=call, verdict=verdict)
