"""The ``python_literal`` repair: read a Python dict literal without evaluating anything.

Models trained on Python code sometimes write ``{'city': 'Paris', 'metric': True}``. When the
*whole* text is a Python dict literal whose values are JSON-compatible (strings, numbers,
``True``/``False``/``None``, lists, dicts with string keys), Python gives it exactly one
meaning, so it can be read. It is read by the relaxed reader in Python mode, which uses the
two helpers here for Python's string escapes and keywords; nothing is ever passed to ``eval``,
``ast`` or ``compile`` (which would also emit ``SyntaxWarning`` on invalid escapes, and
``filterwarnings = error`` turns those into failures).

Not accepted: tuples, sets, bytes, string prefixes (``r''``, ``f''``), implicit string
concatenation, comments, non-string keys, bare names as keys, ``true``/``null`` mixed in: those
are not both a Python literal and a JSON-compatible value, so they have no single reading.
A raw line feed inside a string is read (and reported as ``control_chars`` by the reader):
Python rejects it, but it can only mean a line feed.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

__all__ = ["PYTHON_KEYWORDS", "PythonStringError", "read_python_string"]

#: Python's spelling of the JSON keywords.
PYTHON_KEYWORDS: dict[str, Any] = {"True": True, "False": False, "None": None}

# A Python string literal on one line; a line feed after a backslash is a line continuation.
_PYTHON_STRING = {
    "'": re.compile(r"'([^'\\\n]*+(?:\\.[^'\\\n]*+)*+)'", re.DOTALL),
    '"': re.compile(r'"([^"\\\n]*+(?:\\.[^"\\\n]*+)*+)"', re.DOTALL),
}
# The same literal with raw line feeds inside, which Python rejects but which can only mean
# themselves (the ``control_chars`` repair).
_PYTHON_STRING_LINES = {
    "'": re.compile(r"'([^'\\]*+(?:\\.[^'\\]*+)*+)'", re.DOTALL),
    '"': re.compile(r'"([^"\\]*+(?:\\.[^"\\]*+)*+)"', re.DOTALL),
}
_ESCAPE = re.compile(
    r"\\(?:(?P<simple>[\\'\"abfnrtv\n])|(?P<octal>[0-7]{1,3})|x(?P<hex>[0-9a-fA-F]{2})"
    r"|u(?P<u4>[0-9a-fA-F]{4})|U(?P<u8>[0-9a-fA-F]{8})|N\{(?P<name>[^}]*)\}|(?P<bad>[xuUN]))",
    re.DOTALL,
)
_SIMPLE = {
    "\\": "\\", "'": "'", '"': '"', "a": "\a", "b": "\b", "f": "\f",
    "n": "\n", "r": "\r", "t": "\t", "v": "\v", "\n": "",
}  # fmt: skip


class PythonStringError(ValueError):
    """The text at the index is not a complete Python string literal."""


def read_python_string(text: str, index: int, end: int | None = None) -> tuple[str, int, bool]:
    """Read the Python string literal (``'...'`` or ``"..."``) at ``index``, not past ``end``.

    Returns its value, the index after it, and whether it held a raw line feed (not valid
    Python; the caller decides whether the ``control_chars`` repair may keep it). Escapes
    follow Python exactly: ``\\n``, ``\\'``, octal, ``\\xhh``, ``\\uXXXX``, ``\\UXXXXXXXX``,
    ``\\N{name}``; an unknown escape such as ``\\d`` keeps its backslash, as Python does.
    Triple-quoted strings and strings never closed raise ``PythonStringError``.
    """
    stop = len(text) if end is None else end
    quote = text[index]
    if text.startswith(quote * 3, index, stop):
        raise PythonStringError("triple-quoted strings are not read")
    line_feed = False
    match = _PYTHON_STRING[quote].match(text, index, stop)
    if match is None:
        match = _PYTHON_STRING_LINES[quote].match(text, index, stop)
        if match is None:
            raise PythonStringError("the string is not closed")
        line_feed = True
    body = match.group(1)
    if "\\" not in body:
        return body, match.end(), line_feed
    return _ESCAPE.sub(_unescape, body), match.end(), line_feed


def _unescape(match: re.Match[str]) -> str:
    """The value of one Python escape sequence."""
    simple = match.group("simple")
    if simple is not None:
        return _SIMPLE[simple]
    octal = match.group("octal")
    if octal is not None:
        return chr(int(octal, 8))
    for group in ("hex", "u4", "u8"):
        digits = match.group(group)
        if digits is not None:
            code = int(digits, 16)
            if code > 0x10FFFF:
                raise PythonStringError(f"\\U{digits} is not a Unicode character")
            return chr(code)
    name = match.group("name")
    if name is not None:
        try:
            return unicodedata.lookup(name)
        except KeyError:
            raise PythonStringError(f"unknown character name {name!r}") from None
    if match.group("bad") is not None:
        raise PythonStringError(f"truncated \\{match.group('bad')} escape")
    return match.group()
