"""The shapes of an ``/api/chat`` line, and reading all the complete lines of a read at once.

Each line is one ``ChatResponse`` (ollama/ollama ``api/types.go``), decoded straight into
:class:`Line`. A long answer is thousands of lines that each carry a few characters of text
(``{"model":...,"message":{"role":"assistant","content":"..."},"done":false}``), so the mapper
reads the complete lines of a read with one ``decode_lines`` call (:func:`wrapped_lines`,
:data:`decode_text_lines`, :data:`decode_any_lines`) instead of framing and decoding each
line on its own, whenever that is exactly the same.

Why it is exactly the same. ``decode_lines`` reads JSON values separated by any whitespace:
it does not insist on one value per line (``{}{}`` is two values, ``{"a":`` and ``1}`` on two
lines are one). So the lines are not handed to it as they are: :func:`wrapped_lines` writes each
line in brackets, ``[line]\\n[line]\\n...[line]``, to be decoded as one-element arrays. The
lines are the NDJSON decoder's, so none holds a ``\\n``; a raw line end cannot be inside a JSON
string, and ``]`` then ``[`` (whitespace between) is never inside a JSON value, since after a
value closes only ``,``, ``]`` or ``}`` may come; so no value spans two lines, and each line,
having its brackets, gives at least one value. With exactly as many values as lines, each line
gives exactly one, ``[line]`` whole: a one-element array of the object the line decodes to
alone. A line of two values, a line that is not JSON or not of the shape decoded fails or
miscounts, and the caller reads the lines one by one (the decoder leaves blank lines out).
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

__all__ = [
    "ErrorBody",
    "Function",
    "Line",
    "Message",
    "TextLine",
    "TextMessage",
    "ToolCall",
    "decode_any_lines",
    "decode_line",
    "decode_text_lines",
    "wrapped_block",
    "wrapped_lines",
]


class Function(msgspec.Struct, gc=False):
    """``function`` of a tool call: ``index`` cannot tell calls apart (see the mapper)."""

    name: str | None = None
    # An object on the wire; a string is accepted from servers imitating Ollama.
    arguments: dict[str, Any] | str | None = None
    index: int | None = None


class ToolCall(msgspec.Struct, gc=False):
    """One whole call; ``id`` exists only since Ollama v0.12.10."""

    function: Function
    id: str | None = None


class Message(msgspec.Struct, gc=False):
    """``message``: text, thinking and whole tool calls."""

    content: str | None = None
    thinking: str | None = None
    tool_calls: list[ToolCall] | None = None


class ErrorBody(msgspec.Struct, gc=False):
    """An error object, from proxies that wrap Ollama's error string."""

    message: str | None = None
    type: str | None = None
    code: str | int | None = None


class Line(msgspec.Struct, gc=False):
    """One line of the stream, whatever it carries."""

    model: str | None = None
    message: Message | None = None
    done: bool | None = None
    done_reason: str | None = None
    prompt_eval_count: int | None = None
    eval_count: int | None = None
    # Ollama sends a string; an object is accepted from proxies that wrap it.
    error: str | ErrorBody | None = None


class TextMessage(msgspec.Struct, gc=False):
    """A ``message`` with no thinking and no tool calls."""

    content: str | None = None
    thinking: None = None
    tool_calls: None = None


class TextLine(msgspec.Struct, gc=False, kw_only=True):
    """A line that can only be answer text: what most lines of a long answer are.

    Every field of :class:`Line` is here, typed as in :class:`Line` or narrower (``message``
    required, ``done`` only ``false``, no counters, no error), so a line that decodes as a
    ``TextLine`` decodes as a ``Line`` with the same values, and the mapper reads it as one
    ``TextDelta`` of its content, or nothing for ``""``. Any other line fails to decode.
    (Fields in the order Ollama writes them: msgspec looks for the next one first.)
    """

    model: str | None = None
    message: TextMessage
    done: Literal[False] | None = None
    done_reason: str | None = None
    prompt_eval_count: None = None
    eval_count: None = None
    error: None = None


decode_line = msgspec.json.Decoder(Line).decode
#: Wrapped lines (:func:`wrapped_lines`) that are all :class:`TextLine`, one 1-tuple per line.
decode_text_lines = msgspec.json.Decoder(tuple[TextLine]).decode_lines
#: Wrapped lines of any shape, one 1-tuple of :class:`Line` per line.
decode_any_lines = msgspec.json.Decoder(tuple[Line]).decode_lines


def wrapped_lines(lines: list[bytes]) -> bytes:
    """``lines`` (each without its line end, none holding one) as ``[line]\\n...[line]``.

    Two C-speed joins. A ``TypeError`` if any item is not bytes-like.
    """
    return b"".join((b"[", b"]\n[".join(lines), b"]"))


def wrapped_block(joined: bytes) -> tuple[bytes, int]:
    """Lines joined with ``\\n`` (none after the last) as ``[line]\\n...[line]``, and how many
    lines there are. One ``replace``: the line ends are found with ``memchr``; a blank line
    becomes ``[]``, which no line decodes from, so the block fails and is read line by line."""
    inner = joined.replace(b"\n", b"]\n[")
    # Every line end became three bytes: two more each.
    return b"".join((b"[", inner, b"]")), (len(inner) - len(joined)) // 2 + 1
