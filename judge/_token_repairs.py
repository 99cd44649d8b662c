"""Repairs of single tokens, used by the relaxed reader while it reads an object.

Each function handles one repair kind and says why that reading is the only one. They are
pure functions of ``(text, index)`` so they can be tested on their own; the reader decides
whether the policy allows them and records the kind.

- ``bare_keys``: :func:`read_bare_key`
- ``single_quoted_keys``: :func:`read_single_quoted_key`, :func:`read_mismatched_key`
- ``quote_tokens``: :func:`read_quote_token_string`
- ``trailing_commas``: :func:`skip_trailing_comma`
- ``control_chars``: :func:`escape_control_chars`
- ``invalid_escapes``: :func:`escape_invalid_backslashes`
"""

from __future__ import annotations

import re

from ._scan import QUOTE_TOKENS, SINGLE_QUOTED

__all__ = [
    "CONTROL_CHAR",
    "INVALID_BACKSLASH",
    "escape_control_chars",
    "escape_invalid_backslashes",
    "read_bare_key",
    "read_mismatched_key",
    "read_quote_token_string",
    "read_single_quoted_key",
    "skip_trailing_comma",
]

# A bare key: words without quotes, brackets, colons or commas, maybe separated by single
# spaces or tabs ("Basic LLM Chain"), then optional blanks and the colon.
_BARE_KEY = re.compile(r"""([^\s{}\[\]:,"'<>]+(?:[ \t]+[^\s{}\[\]:,"'<>]+)*)[ \t\r\n]*:""")
_BLANKS = re.compile(r"[ \t\r\n]*+")

# For a key opened with the first quote, its mismatched close: the other quote, then a colon.
_MISMATCHED_CLOSE = {'"': re.compile(r"'[ \t\r\n]*:"), "'": re.compile(r'"[ \t\r\n]*:')}

#: Any character JSON forbids raw inside a string (U+0000 to U+001F).
CONTROL_CHAR = re.compile(r"[\x00-\x1f]")
#: A backslash that does not start a JSON escape (``\"``, ``\\``, ``\/``, ``\b``, ``\f``,
#: ``\n``, ``\r``, ``\t``, ``\uXXXX``); group 1 is set only for the invalid ones.
INVALID_BACKSLASH = re.compile(r'\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})|(\\)', re.DOTALL)


def read_bare_key(text: str, index: int) -> tuple[str, int] | None:
    """Read an unquoted key followed by a colon at ``index``: ``{path: "a"}``.

    Returns the key and the index after the colon. Safe because in key position JSON allows
    only a string, and the key ends at the colon: the words before it can only be that key
    (the JavaScript object-literal reading). A bare word *not* followed by a colon (a bare
    value such as ``[hi, bye]``) is never read, so values are never guessed.
    """
    match = _BARE_KEY.match(text, index)
    if match is None:
        return None
    return match.group(1), match.end()


def read_single_quoted_key(text: str, index: int) -> tuple[str, int] | None:
    """Read a single-quoted key followed by a colon at ``index``: ``{'city': "Paris"}``.

    Returns the key's JSON string body (quotes re-escaped for a double-quoted string) and the
    index after the colon. Safe because a single quote cannot start anything else in key
    position, and the key is closed by its own quote followed by a colon.
    """
    match = SINGLE_QUOTED.match(text, index)
    if match is None:
        return None
    colon = _BLANKS.match(text, match.end()).end()  # type: ignore[union-attr]
    if colon >= len(text) or text[colon] != ":":
        return None
    return _single_to_double_body(match.group()[1:-1]), colon + 1


def read_mismatched_key(text: str, index: int) -> tuple[str, int] | None:
    """Read a key opened with one quote and closed with the other: ``"parameters':``.

    Returns the key's JSON string body and the index after the colon. Only used when the
    strict reading failed (the key's own closing quote is not followed by a colon). Safe
    because the reading is forced: the first other-quote immediately followed by a colon ends
    the key, and without that reading the text does not parse at all. (llama3.2 via Ollama,
    from the tinyagents ``relaxed_json`` tests.)
    """
    opener = text[index]
    match = _MISMATCHED_CLOSE[opener].search(text, index + 1)
    if match is None:
        return None
    body = text[index + 1 : match.start()]
    if opener in body or "\n" in body:
        return None
    return (body if opener == '"' else _single_to_double_body(body)), match.end()


def read_quote_token_string(text: str, index: int) -> tuple[str, int] | None:
    """Read a string delimited by ``<|"|>`` or ``<|">`` at ``index``.

    Returns the string's value (the delimited text, verbatim) and the index after the closing
    token, or ``None`` when there is no quote token at ``index`` or it is never closed.
    Chat templates (Gemma's ``<|"|>``, Kimi via gateways ``<|">``) use these tokens instead of
    ``"``, with no escaping inside, so the text between them is the value character for
    character: ``<|"|>say "hi"<|"|>`` is the string ``say "hi"``. Transcoding is escape-aware
    because the value is produced directly, never by pasting the text between double quotes.
    """
    for token in QUOTE_TOKENS:
        if text.startswith(token, index):
            close = text.find(token, index + len(token))
            if close < 0:
                return None
            return text[index + len(token) : close], close + len(token)
    return None


def skip_trailing_comma(text: str, index: int, closer: str) -> int | None:
    """After a comma at ``index - 1``, return the index of ``closer`` if only blanks follow.

    Safe because a comma directly before ``}`` or ``]`` separates nothing: dropping it is the
    only reading (JavaScript, Python and JSON5 all read it so). Two commas are not repaired.
    """
    after = _BLANKS.match(text, index).end()  # type: ignore[union-attr]
    if after < len(text) and text[after] == closer:
        return after
    return None


def escape_control_chars(body: str) -> str:
    """Escape raw control characters (newline, tab, ...) inside a JSON string body.

    Safe because a raw newline inside a string can only mean a newline: JSON merely requires
    it to be written ``\\n``. The character is kept exactly; only its spelling changes.
    """
    return CONTROL_CHAR.sub(lambda match: f"\\u{ord(match.group()):04x}", body)


def escape_invalid_backslashes(body: str) -> str:
    """Double every backslash that does not start a JSON escape: ``C:\\Users`` stays literal.

    Safe because JSON gives ``\\U``, ``\\m``, ``\\d`` (or ``\\u`` without four hex digits) no
    meaning at all, so the backslash can only be a literal backslash (a Windows path, a regex).
    Valid escapes (``\\n``, ``\\t``, ``\\f``...) are always read as JSON reads them.
    """
    return INVALID_BACKSLASH.sub(
        lambda match: "\\\\" if match.group(1) is not None else match.group(), body
    )


def _single_to_double_body(body: str) -> str:
    """Turn the body of a single-quoted string into the body of a double-quoted one."""
    out: list[str] = []
    index = 0
    length = len(body)
    while index < length:
        char = body[index]
        if char == "\\" and index + 1 < length:
            following = body[index + 1]
            out.append("'" if following == "'" else char + following)
            index += 2
            continue
        out.append('\\"' if char == '"' else char)
        index += 1
    return "".join(out)
