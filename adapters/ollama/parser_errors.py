"""Ollama's tool-parser failures, read from its error bodies (native ``/api/chat``, ``/v1``).

Ollama parses the model's output itself (``model/parsers/``, ``harmony/``), and
``server/routes.go`` answers any built-in parser's error as HTTP 500 ``{"error": "..."}`` (or,
once the stream began, an ``{"error": ...}`` line); its ``/v1`` middleware wraps the same words
in OpenAI's error object, its ``/v1/messages`` in Anthropic's. The words are each parser's (the
rows ``ollama/...`` of :data:`~toolwire.adapters.parser_wordings.WORDINGS`, with the release
that introduced each, from Ollama's history):

- the harmony parser (gpt-oss): ``error parsing tool call: raw='<ARGUMENTS>', err=<Go error>``.
  ``raw`` is the call's ARGUMENTS only: its name is the harmony recipient, which the error does
  not quote. Older servers said ``error parsing tool call: <Go error>`` with no ``raw``;
- qwen3 ``failed to parse JSON: <Go error>``, GLM ``failed to parse XML: ...`` and ``incomplete
  GLM tool call: ...``, Laguna ``failed to parse Laguna JSON tool call: ...``, Glimmer ``parse
  Glimmer call to NAME: ...``, quoting nothing;
- Go's own ``encoding/json`` error, returned as it is (qwen3-vl, ministral: ``invalid character
  ']' after object key:value pair``), and ``encoding/xml``'s (qwen3-coder, qwen3.5, qwen3.6:
  ``XML syntax error on line 8: element <function> closed by </parameter>``): read only as
  the whole message, the words being a library's.

``unexpected end of JSON input`` and ``unexpected EOF`` (Go) say the text ended early: the call
was cut (at ``num_predict`` in ollama/ollama#14570), so it is ``cut``. Only a 500 or an error in
band: a 400 with the same words is about the request (Ollama's request decoding says
``invalid character ...`` too), not the model's output.
"""

from __future__ import annotations

from ...core.parser_errors import ParserErrorFacts
from ..parser_wordings import read_wordings, wordings_of

__all__ = ["read_ollama_parser_error"]

_OLLAMA = wordings_of("ollama")


def read_ollama_parser_error(status: int | None, body: str) -> ParserErrorFacts | None:
    """Ollama's tool-parser errors (see the module docstring), or ``None``."""
    return read_wordings(_OLLAMA, status, body)
