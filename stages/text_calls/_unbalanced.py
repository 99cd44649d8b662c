"""A complete wrapper around a call whose JSON does not balance: a call, rejected.

SmolLM2 on llama-server wrote ``<tool_call>[{"name": "write_file", "arguments": {...}]
</tool_call>`` (issue 27: one ``}`` missing) and the block was left as text, so the agent saw
markup and healing had nothing to ask again. Such a block is certainly a call attempt: its
family's opener and closer are both there, and the text between them reads as a call of an
offered tool once the missing closing brackets are put back. But which text is the arguments
is not certain (in ``{"name": "f", "arguments": {"a": {"b": 1}, "c": 2}`` the missing ``}`` may
close ``a``'s object, making ``c`` a key of the call), so the call is never run and never
completed: it is marked ``unbalanced`` and rejected as ``not_json`` with that reason, as a
structured call with broken JSON is, and healing asks for it again.

The rules, each of which keeps "certainly a call":

- the closer stands outside every JSON string (read by JSON's rules from the body's start, so
  a closer quoted in a value is text of the value); a string still open there is no call;
- only missing closing brackets are put back (one where a bracket of the other kind closes
  the innermost open one, the rest at the closer), at most :data:`MAX_MISSING`; an extra
  closing bracket is no call;
- with them put back, the body reads whole as the family's call (or list of calls) by the
  family's own shape: strict outer object, only its keys, names offered. Nothing is guessed.
"""

from __future__ import annotations

import re
from functools import lru_cache

from ._json import value_end
from ._reading import ReadContext, TextCall
from ._shapes import CallShape, call_list_or_skip

__all__ = ["MAX_MISSING", "unbalanced_arguments", "unbalanced_calls"]

#: At most this many closing brackets may be missing: more, and the text is too far from a
#: call to say it certainly is one.
MAX_MISSING = 2
_CLOSING = {"{": "}", "[": "]"}
#: A JSON string (closed), a bracket, or a lone quote (a string never closed).
_TOKEN = r'"[^"\\]*+(?:\\.[^"\\]*+)*+"|[{}\[\]]|"'


def unbalanced_calls(
    text: str, body: int, closer: str, context: ReadContext, shape: CallShape
) -> tuple[tuple[TextCall, ...], int] | None:
    """The calls of the JSON body at ``text[body]`` (``{`` or ``[``) that ``closer`` ends
    with closing brackets missing, each marked ``unbalanced``, and where the closer starts;
    ``None`` when the body is not such a call (see the module docstring)."""
    scanned = _close_brackets(text, body, closer)
    if scanned is None:
        return None
    fixed, closer_at = scanned
    read = call_list_or_skip(fixed, 0, context.at_final(True), shape)
    if not isinstance(read, tuple):
        return None
    calls, end = read
    if end != len(fixed) or any(call.cut for call in calls):
        return None
    written = text[body:closer_at].rstrip()
    return tuple(TextCall(call.name, written, unbalanced=True) for call in calls), closer_at


def unbalanced_arguments(text: str, body: int, closer: str) -> tuple[str, int] | None:
    """The arguments object at ``text[body] == "{"`` that ``closer`` ends with closing brackets
    missing, as written, and where the closer starts (the families that write the name
    outside the JSON: Solar Open, PLaMo 3); ``None`` when it is not one object once they are
    put back."""
    scanned = _close_brackets(text, body, closer)
    if scanned is None:
        return None
    fixed, closer_at = scanned
    if value_end(fixed, 0) != len(fixed):
        return None
    return text[body:closer_at].rstrip(), closer_at


@lru_cache(maxsize=64)
def _tokens(closer: str) -> re.Pattern[str]:
    """The closer (first: it may start with a bracket), or a JSON token."""
    return re.compile(f"{re.escape(closer)}|{_TOKEN}", re.DOTALL)


def _close_brackets(text: str, body: int, closer: str) -> tuple[str, int] | None:
    """The body up to ``closer`` with its missing closing brackets put back, and where the
    closer starts; ``None`` when the closer is not there outside strings, nothing is missing,
    a bracket is extra, a string is left open, or too many are missing."""
    tokens = _tokens(closer)
    stack: list[str] = []
    pieces: list[str] = []
    copied = body
    missing = 0
    for match in tokens.finditer(text, body):
        token = match.group()
        if token == closer:
            if not missing and not stack:
                return None  # balanced: the family's reader decides it
            pieces.append(text[copied : match.start()].rstrip())
            missing += len(stack)
            pieces.extend(_CLOSING[bracket] for bracket in reversed(stack))
            if missing > MAX_MISSING:
                return None
            return "".join(pieces), match.start()
        first = token[0]
        if first == '"':
            if len(token) == 1:
                return None  # a string never closed before the closer
            continue
        if first in _CLOSING:
            stack.append(first)
            continue
        if not stack:
            return None  # a closing bracket too many
        if _CLOSING[stack[-1]] != token:
            # ``]`` where the innermost open bracket is ``{``: that ``{`` was never closed.
            pieces.append(text[copied : match.start()])
            copied = match.start()
            pieces.append(_CLOSING[stack.pop()])
            missing += 1
            if not stack or _CLOSING[stack[-1]] != token or missing > MAX_MISSING:
                return None
        stack.pop()
    return None  # the closer never came
