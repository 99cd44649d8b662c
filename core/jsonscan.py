"""Cheap structural facts about a JSON-ish text, without parsing it.

Finish detection must tell, for a call still open at the end of a stream, whether its arguments
stop inside a string, object or array: llama-cpp-python reports ``finish_reason: tool_calls`` on
calls cut at ``max_tokens``, so the text is the only evidence. The scan is a regex over whole
string literals and brackets, so it runs at C speed and never recurses.
"""

from __future__ import annotations

import re

import msgspec

__all__ = ["unterminated"]

# A complete double-quoted string, or one bracket, or a lone quote (a string never closed).
_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\]"]', re.DOTALL)
_OPENERS = frozenset("{[")


def unterminated(text: str) -> bool:
    """True when ``text`` ends inside a string, or with an object or array still open.

    Empty or blank text is *not* unterminated (it is a call with no arguments). Text that is
    strict JSON is decided by msgspec first, which is the common case and costs almost nothing.
    """
    if not text or text.isspace():
        return False
    try:
        msgspec.json.decode(text)
    except msgspec.DecodeError as error:
        if str(error) == "Input data was truncated":
            return True
    except (UnicodeEncodeError, RecursionError):
        pass  # a lone surrogate (an SDK object's string can hold one), or nesting past msgspec's
    else:
        return False
    # Strict JSON failed before the end. The scan pairs quotes in order, so one quote missing
    # earlier (``, description": "x"}``) shifts every later pair and the text looks cut inside
    # a string. Only a bracket left open whichever way the quotes pair is evidence of a cut.
    return _scanned_open(text) and _brackets_open(text)


def _scanned_open(text: str) -> bool:
    """True when, pairing quotes in order, ``text`` ends inside a string or an open bracket."""
    depth = 0
    for match in _TOKENS.finditer(text):
        token = match.group()
        if token == '"':
            return True
        if token in _OPENERS:
            depth += 1
        elif len(token) == 1 and depth > 0:
            depth -= 1
    return depth > 0


def _brackets_open(text: str) -> bool:
    """True when ``text`` opens more brackets than it closes, counting those in strings too."""
    return text.count("{") + text.count("[") > text.count("}") + text.count("]")
