"""vLLM's tool-parser failures and history refusals, read from its error bodies.

vLLM's tool parsers mostly fail quietly: the Hermes parser logs "Error in extracting tool call
from response" and returns the call as text (vllm-project/vllm#17790), which is no error body.
The one that fails the response is the harmony parser of gpt-oss models: HTTP 500 (or an error
event in the stream) ``unexpected tokens remaining in message header: Some("to=functions.NAME")``
when the model wrote a call's header the parser cannot read (vllm-project/vllm#51977, #23567).
The header names the tool the model meant; its arguments were never quoted. The same words
without a ``to=functions.`` recipient may be about a message that was no call: not read.

The history refusal: vLLM up to 0.28 ``json.loads`` every earlier call's ``arguments`` string
while rendering the prompt, and one that is no JSON fails the request with 400 and Python's
``json.JSONDecodeError`` text (``Expecting ',' delimiter: line 1 column 54 (char 53)``,
``Unterminated string starting at: ...``): vllm-project/vllm#43995, BigPizzaV3/CodexPlusPlus#1019,
NousResearch/hermes-agent#12643. From 0.29 the arguments are silently replaced by ``{}``.
The words, with their provenance, are the rows ``vllm/...`` of
:data:`~toolwire.adapters.parser_wordings.WORDINGS`.
"""

from __future__ import annotations

from ...core.parser_errors import ParserErrorFacts
from ..parser_wordings import read_wordings, wordings_of

__all__ = ["read_vllm_error"]

_VLLM = wordings_of("vllm")


def read_vllm_error(status: int | None, body: str) -> ParserErrorFacts | None:
    """vLLM's harmony header failure or its history refusal (module docstring), or ``None``."""
    return read_wordings(_VLLM, status, body)
