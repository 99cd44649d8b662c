"""llama-server's (llama.cpp) tool-parser failures and history refusals, read from its bodies.

llama-server parses the model's output with the chat template's parser (``common/chat.cpp``);
when that fails it answers HTTP 500 in the OpenAI shape, ``{"error": {"code": 500, "message":
"Failed to parse input at pos N: <TAIL>", "type": "server_error"}}`` (the same body on its
Anthropic endpoint ``/v1/messages``): ggml-org/llama.cpp#20761, #24644; pwilkin/llama.cpp#9;
openclaw/openclaw#61838. ``<TAIL>`` is the model's output FROM position N to the end, in the
model's own markup: it may hold one or several complete calls (the parser failed on what came
before them), a lone ``</tool_call>``, or a call cut inside a tag. It is quoted as ``output``;
only a reader of that markup (:mod:`toolwire.stages.server_parsed`) may read calls from it.

The history refusal: a template that takes arguments as objects makes the server parse every
earlier call's ``arguments`` string (``func_args_not_string``), and one that is no JSON fails
the request with 500 ``Failed to parse tool call arguments as JSON: [json.exception...]``
(ggml-org/llama.cpp#25510, #22948, #22072; vxcontrol/pentagi#313 through LiteLLM).
"""

from __future__ import annotations

import re

from ...core.parser_errors import ParserErrorFacts
from ..error_bodies import error_message

__all__ = ["read_llama_server_error"]

_TAIL = re.compile(r"Failed to parse input at pos (?P<pos>\d+): ?")
_HISTORY = "Failed to parse tool call arguments as JSON"


def read_llama_server_error(status: int | None, body: str) -> ParserErrorFacts | None:
    """llama-server's tool-parser failure or history refusal (module docstring), or ``None``."""
    if status is not None and status not in (400, 500):
        return None
    message, whole = error_message(body)
    history = message.find(_HISTORY)
    if history >= 0:
        return ParserErrorFacts(
            server="llama.cpp", error=message[history:].strip(), about="history"
        )
    match = _TAIL.search(message)
    if match is None:
        return None
    return ParserErrorFacts(
        server="llama.cpp",
        error=f"Failed to parse input at pos {match['pos']}",
        quoted=message[match.end() :],
        quoted_form="output",
        quote_whole=whole,
    )
