"""llama-server's (llama.cpp) tool-parser failures and history refusals, read from its bodies.

llama-server parses the model's output with the chat template's parser (``common/chat.cpp``);
when that fails it answers HTTP 500 in the OpenAI shape, ``{"error": {"code": 500, "message":
..., "type": "server_error"}}`` (the same body on ``/v1/messages`` and ``/v1/responses``), or,
once a stream began, the same error in band: ``data: {"error": {...}}`` on Chat Completions and
Responses, ``event: error`` with the error object itself on Messages
(``tools/server/server-context.cpp``). Its words changed (the rows ``llama.cpp/...`` of
:data:`~toolwire.adapters.parser_wordings.WORDINGS`, with the release of each):

- ``The model produced output that does not match the expected peg-native format`` (any format
  name: ``peg-simple``, ``peg-gemma4``, ``peg-minimax-m3``, ``Content-only``): today's words.
  They quote nothing and name no call: the server could not parse the model's *output*, a call
  may be in it or not (``about="output"``). In a stream the error comes after what the server's
  partial parse already sent (calls included): the final parse of the finished output failed;
- ``Failed to parse input at pos N: <TAIL>``: the model's output FROM position N to the end, in
  the model's own markup (one or several whole calls, a lone ``</tool_call>``, a call cut inside
  a tag, any family's markup). It is quoted as ``output``; only a reader of that markup
  (:mod:`toolwire.stages.server_parsed`) may read calls from it;
- ``Failed to parse input at pos N`` alone: the first PEG parser's words.

The history refusal: a template that takes arguments as objects makes the server parse every
earlier call's ``arguments`` string (``func_args_not_string``), and one that is no JSON fails
the request with 500 ``Failed to parse tool call arguments as JSON: [json.exception...]``.
"""

from __future__ import annotations

from ...core.parser_errors import ParserErrorFacts
from ..parser_wordings import read_wordings, wordings_of

__all__ = ["read_llama_server_error"]

_LLAMA_CPP = wordings_of("llama.cpp")


def read_llama_server_error(status: int | None, body: str) -> ParserErrorFacts | None:
    """llama-server's tool-parser failure or history refusal (module docstring), or ``None``."""
    return read_wordings(_LLAMA_CPP, status, body)
