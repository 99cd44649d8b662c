"""The constrained re-ask on the real llama-cpp-python server with SmolLM2-135M (issue 31).

The exchange's first answer is a scripted broken ``write`` call (``heal/first_broken.py``); the
re-ask goes to the real server with ``tool_choice`` naming ``write``, which its
``chatml-function-calling`` format turns into a grammar of the tool's schema
(``LlamaGrammar.from_json_schema``). The call the model then writes is ``write``'s, passes the
judge, and the response says it came from a constrained re-ask.
"""

from __future__ import annotations

import json

import jsonschema
import pytest
from heal.first_broken import constrained_exchange

from toolwire.cli.demo.model_file import MODEL_NAME
from toolwire.cli.demo.sandbox import TOOLS
from toolwire.cli.demo.server import LocalServer

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def test_the_real_server_writes_a_valid_call_of_the_chosen_tool(
    anyio_backend: str, local_server: LocalServer
) -> None:
    exchange = await constrained_exchange(local_server.base_url, "llama-cpp", MODEL_NAME)
    assert exchange.response.status_code == 200, exchange.response.text
    _, retry = exchange.sent
    assert retry["tool_choice"] == {"type": "function", "function": {"name": "write"}}
    assert exchange.response.headers["x-toolwire-constrained"] == "write=1"
    call = exchange.call
    assert call["name"] == "write"
    (write,) = [tool for tool in TOOLS if tool["function"]["name"] == "write"]
    jsonschema.validate(json.loads(call["arguments"]), write["function"]["parameters"])
