"""The text the model reads when its call was rejected.

The message is deterministic (same verdict, same text) and always has the same four parts:
what happened to which call, what exactly went wrong and where, what was received (capped at
:data:`QUOTE_LIMIT` characters), and what to do next. It is rendered from the verdict, the tool
name and the raw text only, so the stage can re-render it once it knows the call id.
"""

from __future__ import annotations

import re

from ..core.events import CutBy, CutFacts
from ..core.verdict import Verdict
from ._cut_message import cut_summary_and_advice

__all__ = ["QUOTE_LIMIT", "quote_received", "render_message"]

#: How many characters of the raw arguments a message quotes at most.
QUOTE_LIMIT = 500

_UNPRINTABLE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\ud800-\udfff]")


def _printable(text: str) -> str:
    """Make ``text`` safe to show and to encode: escape control characters, replace surrogates."""

    def replace(match: re.Match[str]) -> str:
        char = match.group()
        return "\ufffd" if "\ud800" <= char <= "\udfff" else f"\\x{ord(char):02x}"

    return _UNPRINTABLE.sub(replace, text)


def quote_received(raw: str) -> str:
    """The ``Received ...`` line: the raw text, capped, with its total length when longer."""
    length = len(raw)
    if length == 0:
        return "Received: nothing (the arguments were empty)."
    if length <= QUOTE_LIMIT:
        return f"Received ({length} characters): {_printable(raw)}"
    shown = _printable(raw[:QUOTE_LIMIT])
    return f"Received (first {QUOTE_LIMIT} of {length} characters): {shown}…"


def _sentence(text: str) -> str:
    text = text.strip()
    if not text:
        return text
    text = text[0].upper() + text[1:]
    return text if text.endswith((".", "?", "!")) else text + "."


def render_message(
    verdict: Verdict,
    *,
    tool: str,
    raw: str,
    call_id: str | None = None,
    cut_by: CutBy | None = None,
    cut_facts: CutFacts | None = None,
) -> str | None:
    """The model-facing message for a rejected verdict (``None`` when the call may run).

    ``raw`` is the arguments text exactly as received; ``call_id`` is named when known.
    ``cut_by`` says what cut a ``truncated`` call short, so that the message stays true: the
    output-token limit (retrying hits it again), a stream that dropped or failed (a plain retry
    is the right answer), or ``None``/``unknown``: nothing shows why, and ``cut_facts`` (the
    finish, usage and stop sequences) are stated instead of a guess.
    """
    if verdict.outcome != "rejected" or verdict.reason is None:
        return None
    subject = f"Tool call `{tool}`" + (f" (id {call_id})" if call_id else "")
    details = [line for line in (verdict.detail or "").splitlines() if line.strip()]
    middle = [_sentence(line) for line in details]
    reason = verdict.reason
    if reason == "truncated":
        summary, advice = cut_summary_and_advice(
            tool=tool, raw_length=verdict.raw_length, cut_by=cut_by, facts=cut_facts
        )
    elif reason == "not_json":
        summary = "its arguments are not valid JSON."
        middle = [f"Problem: {line}" for line in middle]
        advice = (
            f"Call `{tool}` again with its arguments as exactly one JSON object: keys and "
            "string values in double quotes, nothing before or after it."
        )
    elif reason == "wrong_type":
        summary = "its arguments must be a JSON object."
        advice = f"Call `{tool}` again with one JSON object whose keys are the parameter names."
    elif reason == "ambiguous":
        summary = "its arguments hold more than one JSON object, so there is no single call to run."
        advice = "Make one call per action, each with exactly one JSON object as its arguments."
    elif reason == "schema":
        summary = f"its arguments do not match the parameters of `{tool}`:"
        middle = [f"- {line.strip()}" for line in details]
        advice = f"Fix these and call `{tool}` again."
    elif reason == "unchecked":
        # toolwire's limit, not the model's mistake: say so, and what would get it through.
        summary = (
            f"toolwire could not finish checking its arguments against the parameters of "
            f"`{tool}` in time. Nothing was found wrong with them."
        )
        advice = (
            f"If the call is still needed, call `{tool}` again with smaller arguments, or split "
            "the work into several smaller calls."
        )
    elif reason == "unknown_tool":
        summary = f"there is no tool named `{tool}`."
        advice = "Call one of the available tools by its exact name."
    else:  # too_large
        summary = "its arguments are too large."
        advice = "Send smaller arguments, or split the work into several smaller calls."
    verb = "" if reason == "truncated" else " was not run"
    header = f"{subject}{verb}: {summary}" if verb else f"{subject}: {summary}"
    return "\n".join([header, *middle, quote_received(raw), advice])
