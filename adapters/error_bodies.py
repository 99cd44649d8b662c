"""The message inside a server's error body, whatever envelope it came in.

Servers wrap one error message in several shapes, and a tool-parser reader
(:mod:`toolwire.core.parser_errors`) wants the message itself:

- OpenAI's ``{"error": {"message": ..., "type": ..., "code": ...}}`` (llama-server, vLLM, Ollama's
  ``/v1``, LM Studio), and vLLM's older flat ``{"object": "error", "message": ...}``;
- Ollama's native ``{"error": "..."}`` (an HTTP body, or a line of the stream), and the
  ``{"error parsing tool call": "..."}`` line of Ollama 0.11.4, whose message is its key
  (ollama/ollama#11781);
- a bare message (an error handed over as text, an SDK's error string).

A proxy may nest a server's body inside its own message (LiteLLM: ``OpenAIException - {...}``):
the readers search the message, they do not anchor on it.

A body cut short (toolwire reads at most 64 KiB of an error body; a quoted call can be larger)
is no JSON: its message is read up to the cut, and :func:`error_message` says it was cut, so
that nothing quoted in it is taken as whole.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

__all__ = ["error_message"]

#: The start of a body whose message is a JSON string: ``{"error": "`` or ``{"error":
#: {"message": "`` (or a flat ``"message": "``).
_MESSAGE_START = re.compile(r'\A\{\s*"error"\s*:\s*(?:\{(?:[^{}"]|"[^"\\]*")*?"message"\s*:\s*)?"')


def _message_of(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        error = value.get("error")
        if isinstance(error, str):
            return error
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])
        if isinstance(value.get("message"), str):
            return str(value["message"])
        if len(value) == 1:
            ((key, inner),) = value.items()
            if "error" in key and isinstance(inner, str):
                return f"{key}: {inner}"
    return None


def _cut_message(text: str) -> str | None:
    """The message of a JSON error body cut inside its message string, up to the cut."""
    start = _MESSAGE_START.match(text)
    if start is None:
        return None
    rest = text[start.end() :]
    trailing = len(rest) - len(rest.rstrip("\\"))
    if trailing % 2:
        rest = rest[:-1]  # an escape cut in half
    try:
        decoded = msgspec.json.decode(f'"{rest}"')
    except msgspec.DecodeError:
        return None
    return decoded if isinstance(decoded, str) else None


def error_message(body: str) -> tuple[str, bool]:
    """The message of an error ``body`` (see the module docstring), and whether it is whole.

    ``False``: the body is JSON cut short inside its message, which is read up to the cut.
    A body that is no JSON at all is its own message, whole.
    """
    text = body.strip()
    if text[:1] == "{":
        try:
            decoded = msgspec.json.decode(text)
        except msgspec.DecodeError:
            cut = _cut_message(text)
            return (cut, False) if cut is not None else (text, True)
        message = _message_of(decoded)
        if message is not None:
            return message, True
    return text, True
