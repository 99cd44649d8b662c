"""LM Studio's tool-parser failures, read from its error bodies.

LM Studio is closed source; its words come from its users' reports. Its own tool-call parser
says ``Failed to parse tool call: <reason>`` (``Unexpected end of content``, ``Extra content
after end of tool call``, ``Expected "<|message|>", but got "to=function" at index 89``): on
Chat Completions it mostly drops the call and answers 200 (lmstudio-bug-tracker#942), but its
``/v1/responses`` answers HTTP 500 on such a failure (lmstudio-bug-tracker#2224). Its llama.cpp
engine passes llama.cpp's own words on (``The model produced output that does not match the
expected peg-native format``), which the ``lmstudio`` provider reads with llama-server's reader.
The row is ``lmstudio/tool-call`` of :data:`~toolwire.adapters.parser_wordings.WORDINGS`;
``Failed to parse tool call arguments as JSON`` (llama.cpp's history refusal) is not these
words: they have a colon right after ``tool call``.
"""

from __future__ import annotations

from ...core.parser_errors import ParserErrorFacts
from ..parser_wordings import read_wordings, wordings_of

__all__ = ["read_lmstudio_error"]

_LMSTUDIO = wordings_of("lmstudio")


def read_lmstudio_error(status: int | None, body: str) -> ParserErrorFacts | None:
    """LM Studio's ``Failed to parse tool call: ...`` (module docstring), or ``None``."""
    return read_wordings(_LMSTUDIO, status, body)
