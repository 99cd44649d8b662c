"""Repairs of single tokens, used by the relaxed reader while it reads an object.

Each function handles one repair kind and says why that reading is the only one. They are
pure functions of ``(text, index[, end])`` so they can be tested on their own; the reader
decides whether the policy allows them and records the kind. Each matches at ``index`` only
(never searches ahead) and never reads past ``end``, so its cost is bounded by what it reads.

- ``bare_keys``: :func:`read_bare_key`
- ``single_quoted_keys``: :func:`read_single_quoted_key`, :func:`read_mismatched_key`
- ``quote_tokens``: :func:`read_quote_token_string`
- ``trailing_commas``: read by the reader itself (a comma directly before ``}`` or ``]``)
- ``control_chars``: :func:`escape_control_chars`
- ``invalid_escapes``: :func:`escape_invalid_backslashes`
"""

from __future__ import annotations

import re

from ._scan import QUOTE_TOKENS, SINGLE_QUOTED

__all__ = [
    "CONTROL_CHAR",
    "escape_control_chars",
    "escape_invalid_backslashes",
    "first_invalid_escape",
    "read_bare_key",
    "read_mismatched_key",
    "read_quote_token_string",
    "read_single_quoted_key",
]

# A bare key: words without quotes, brackets, colons or commas, maybe separated by single
# spaces or tabs ("Basic LLM Chain"), then optional blanks and the colon.
_BARE_KEY = re.compile(r"""([^\s{}\[\]:,"'<>]++(?:[ \t]++[^\s{}\[\]:,"'<>]++)*+)[ \t\r\n]*+:""")
_BLANKS = re.compile(r"[ \t\r\n]*+")
# What changes between a single-quoted and a double-quoted body: escapes (kept, except ``\'``)
# and bare double quotes (escaped).
_SINGLE_BODY_CHANGE = re.compile(r'\\.|"', re.DOTALL)

# A key opened with one quote and closed with the other, then a colon. The body stops at the
# first other-quote followed by a colon; it may not hold the opening quote or a line feed, so
# the match never runs past the next opening quote or line (each is matched at one position).
_MISMATCHED_KEY = {
    '"': re.compile('"([^"\'\\n]*+(?:\'(?![ \\t\\r\\n]*+:)[^"\'\\n]*+)*+)\'[ \\t\\r\\n]*+:'),
    "'": re.compile("'([^'\"\\n]*+(?:\"(?![ \\t\\r\\n]*+:)[^'\"\\n]*+)*+)\"[ \\t\\r\\n]*+:"),
}

#: Any character JSON forbids raw inside a string (U+0000 to U+001F).
CONTROL_CHAR = re.compile(r"[\x00-\x1f]")
# A JSON escape (group 1: ``\"``, ``\\``, ``\/``, ``\b``, ``\f``, ``\n``, ``\r``, ``\t``,
# ``\uXXXX``) or a backslash that starts none.
_ESCAPE_OR_BACKSLASH = re.compile(r'(\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))|\\')
# Everything up to the first backslash that does not start a JSON escape.
_VALID_ESCAPES = re.compile(r'[^\\]*+(?:(?:\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})[^\\]*+)*+')
# Each control character, spelled as a JSON escape (a table: ``str.translate`` runs in C).
_CONTROL_ESCAPES = {code: f"\\u{code:04x}" for code in range(0x20)}


def read_bare_key(text: str, index: int, end: int | None = None) -> tuple[str, int] | None:
    """Read an unquoted key followed by a colon at ``index``: ``{path: "a"}``.

    Returns the key and the index after the colon. Safe because in key position JSON allows
    only a string, and the key ends at the colon: the words before it can only be that key
    (the JavaScript object-literal reading). A bare word *not* followed by a colon (a bare
    value such as ``[hi, bye]``) is never read, so values are never guessed.
    """
    match = _BARE_KEY.match(text, index, len(text) if end is None else end)
    if match is None:
        return None
    return match.group(1), match.end()


def read_single_quoted_key(
    text: str, index: int, end: int | None = None
) -> tuple[str, int] | None:
    """Read a single-quoted key followed by a colon at ``index``: ``{'city': "Paris"}``.

    Returns the key's JSON string body (quotes re-escaped for a double-quoted string) and the
    index after the colon. Safe because a single quote cannot start anything else in key
    position, and the key is closed by its own quote followed by a colon.
    """
    stop = len(text) if end is None else end
    match = SINGLE_QUOTED.match(text, index, stop)
    if match is None:
        return None
    colon = _BLANKS.match(text, match.end(), stop).end()  # type: ignore[union-attr]
    if colon >= stop or text[colon] != ":":
        return None
    return _single_to_double_body(match.group()[1:-1]), colon + 1


def read_mismatched_key(
    text: str, index: int, end: int | None = None
) -> tuple[str, int] | None:
    """Read a key opened with one quote and closed with the other: ``"parameters':``.

    Returns the key's JSON string body and the index after the colon. Only used when the
    strict reading failed (the key's own closing quote is not followed by a colon). Safe
    because the reading is forced: the first other-quote immediately followed by a colon ends
    the key, and without that reading the text does not parse at all. (llama3.2 via Ollama,
    from the tinyagents ``relaxed_json`` tests.)
    """
    opener = text[index]
    match = _MISMATCHED_KEY[opener].match(text, index, len(text) if end is None else end)
    if match is None:
        return None
    body = match.group(1)
    return (body if opener == '"' else _single_to_double_body(body)), match.end()


def read_quote_token_string(
    text: str, index: int, end: int | None = None
) -> tuple[str, int] | None:
    """Read a string delimited by ``<|"|>`` or ``<|">`` at ``index``.

    Returns the string's value (the delimited text, verbatim) and the index after the closing
    token, or ``None`` when there is no quote token at ``index`` or it is never closed.
    Chat templates (Gemma's ``<|"|>``, Kimi via gateways ``<|">``) use these tokens instead of
    ``"``, with no escaping inside, so the text between them is the value character for
    character: ``<|"|>say "hi"<|"|>`` is the string ``say "hi"``. Transcoding is escape-aware
    because the value is produced directly, never by pasting the text between double quotes.
    """
    stop = len(text) if end is None else end
    for token in QUOTE_TOKENS:
        if text.startswith(token, index, stop):
            close = text.find(token, index + len(token), stop)
            if close < 0:
                return None
            return text[index + len(token) : close], close + len(token)
    return None


def escape_control_chars(body: str) -> str:
    """Escape raw control characters (newline, tab, ...) inside a JSON string body.

    Safe because a raw newline inside a string can only mean a newline: JSON merely requires
    it to be written ``\\n``. The character is kept exactly; only its spelling changes.
    """
    return body.translate(_CONTROL_ESCAPES)


def first_invalid_escape(body: str) -> int | None:
    """Where the first backslash that does not start a JSON escape is, or ``None``."""
    end = _VALID_ESCAPES.match(body).end()  # type: ignore[union-attr]
    return None if end == len(body) else end


def escape_invalid_backslashes(body: str) -> str:
    """Double every backslash that does not start a JSON escape: ``C:\\Users`` stays literal.

    Safe because JSON gives ``\\U``, ``\\m``, ``\\d`` (or ``\\u`` without four hex digits) no
    meaning at all, so the backslash can only be a literal backslash (a Windows path, a regex).
    Valid escapes (``\\n``, ``\\t``, ``\\f``...) are always read as JSON reads them.
    """
    return _ESCAPE_OR_BACKSLASH.sub(_keep_escape_or_double, body)


def _keep_escape_or_double(match: re.Match[str]) -> str:
    return match.group(1) or "\\\\"


def _single_to_double_body(body: str) -> str:
    """Turn the body of a single-quoted string into the body of a double-quoted one.

    ``\\'`` loses its backslash, a bare ``"`` gains one; every other escape is kept as written.
    """
    return _SINGLE_BODY_CHANGE.sub(_double_quoted_spelling, body)


def _double_quoted_spelling(match: re.Match[str]) -> str:
    text = match.group()
    if text == '"':
        return '\\"'
    return "'" if text == "\\'" else text
