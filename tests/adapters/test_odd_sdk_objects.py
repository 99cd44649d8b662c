"""SDK objects that bytes could never carry: model output still never raises.

The SDKs read JSON with ``json.loads``, which takes ``"\\ud800"`` as a lone surrogate; msgspec
cannot encode one. A byte source never gets there (msgspec refuses the escape, an error event),
but an SDK object or a dict in an SDK's shape did, and raised ``UnicodeEncodeError`` from the
mappers, the text-call readers and the finish. Objects can also nest past Python's recursion
limit, which ``repr``, ``deepcopy`` and msgspec all hit. Each case here raised before; now a call
is rejected with a true message, or the piece is an ``unknown_shape`` error event.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from _toolwire_testdata import chat_chunk
from hypothesis import given, settings
from hypothesis import strategies as st

import toolwire
from toolwire.core.errors import ConfigurationError
from toolwire.core.json_text import json_string, json_text
from toolwire.judge import parse_arguments

pytestmark = pytest.mark.anyio

LONE = "\ud800"
WRITE = {"type": "function", "function": {"name": "write", "parameters": {"type": "object"}}}
REQUEST = {"model": "m", "messages": [], "tools": [WRITE]}
GEMINI_REQUEST = {
    "contents": [],
    "tools": [{"functionDeclarations": [{"name": "write", "parameters": {"type": "object"}}]}],
}
MESSAGES_REQUEST = {
    "model": "m",
    "max_tokens": 9,
    "messages": [],
    "tools": [{"name": "write", "input_schema": {"type": "object"}}],
}


def _deep(levels: int) -> Any:
    value: Any = "x"
    for _ in range(levels):
        value = {"a": value}
    return value


def _chat_call(arguments: Any) -> list[dict[str, Any]]:
    call = {"index": 0, "id": "call_1", "type": "function"}
    function = {"name": "write", "arguments": arguments}
    fragment = chat_chunk({"tool_calls": [{**call, "function": function}]})
    return [fragment, chat_chunk({}, "tool_calls")]


def _anthropic(*events: dict[str, Any], stop: str = "tool_use") -> list[dict[str, Any]]:
    start = {
        "type": "message_start",
        "message": {
            "id": "msg_1", "type": "message", "role": "assistant", "model": "m", "content": [],
            "usage": {"input_tokens": 1, "output_tokens": 1},
        },
    }  # fmt: skip
    end = [
        {"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 2}},
        {"type": "message_stop"},
    ]
    return [start, *events, *end]


def _gemini_call(args: Any) -> list[dict[str, Any]]:
    content = {"role": "model", "parts": [{"functionCall": {"name": "write", "args": args}}]}
    return [{"candidates": [{"content": content, "finishReason": "STOP"}]}]


def _ollama_call(arguments: Any) -> list[dict[str, Any]]:
    message = {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"function": {"name": "write", "arguments": arguments}}],
    }
    return [{"model": "m", "message": message, "done": True, "done_reason": "stop"}]


async def _collect(provider: str, source: list[Any], request: Any = None) -> toolwire.Turn:
    if request is None:
        request = GEMINI_REQUEST if provider == "gemini" else REQUEST
    return await toolwire.Pipeline(provider).collect(source, request=request)


def _rejected_as_not_unicode(turn: toolwire.Turn) -> None:
    (call,) = turn.calls
    assert call.verdict is not None
    assert (call.verdict.outcome, call.verdict.reason) == ("rejected", "not_json")
    assert call.verdict.detail is not None
    assert "lone surrogate (U+D800)" in call.verdict.detail
    assert not turn.runnable


@pytest.mark.parametrize(
    ("provider", "source", "request_body"),
    [
        ("openai-chat", _chat_call({"a": LONE}), REQUEST),
        ("openai-chat", _chat_call('{"a": "' + LONE + '"}'), REQUEST),
        ("gemini", _gemini_call({"a": LONE}), GEMINI_REQUEST),
        ("ollama", _ollama_call({"a": LONE}), REQUEST),
        (
            "anthropic",
            _anthropic(
                {
                    "type": "content_block_start", "index": 0,
                    "content_block": {"type": "tool_use", "id": "t1", "name": "write",
                                      "input": {"a": LONE}},
                },
                {"type": "content_block_stop", "index": 0},
            ),
            MESSAGES_REQUEST,
        ),
    ],
    ids=["chat-object", "chat-text", "gemini", "ollama", "anthropic"],
)  # fmt: skip
async def test_a_lone_surrogate_in_the_arguments_is_a_rejected_call(
    provider: str, source: list[Any], request_body: Any
) -> None:
    _rejected_as_not_unicode(await _collect(provider, source, request_body))


async def test_real_sdk_objects_with_a_lone_surrogate_are_rejected_calls() -> None:
    import ollama
    from google.genai.types import GenerateContentResponse

    escaped = json.dumps({"a": LONE})  # the SDK reads the escape "\ud800" back
    line = json.loads(json.dumps(_ollama_call(None)[0]).replace("null", escaped, 1))
    turn = await _collect("ollama", [ollama.ChatResponse.model_validate(line)])
    _rejected_as_not_unicode(turn)
    chunk = GenerateContentResponse.model_validate(_gemini_call({"a": LONE})[0])
    _rejected_as_not_unicode(await _collect("gemini", [chunk]))


@pytest.mark.parametrize("where", ["stringValue", "jsonPath"])
async def test_gemini_streamed_arguments_with_a_lone_surrogate(where: str) -> None:
    piece = {"jsonPath": "$.a", "stringValue": "x"}
    piece[where] += LONE
    source = [
        {"candidates": [{"content": {"role": "model", "parts": [
            {"functionCall": {"name": "write", "willContinue": True}}]}}]},
        {"candidates": [{"content": {"role": "model", "parts": [
            {"functionCall": {"partialArgs": [piece], "willContinue": False}}]}}]},
        {"candidates": [{"content": {"role": "model", "parts": [{"text": ""}]},
                         "finishReason": "STOP"}]},
    ]  # fmt: skip
    turn = await _collect("gemini", source)
    (call,) = turn.calls
    assert call.verdict is not None
    assert call.verdict.reason == "not_json"
    assert not turn.runnable


async def test_a_server_tool_input_with_a_lone_surrogate_is_replayed_from_its_start() -> None:
    source = _anthropic(
        {
            "type": "content_block_start", "index": 0,
            "content_block": {"type": "server_tool_use", "id": "s1",
                              "name": "bash_code_execution", "input": {}},
        },
        {
            "type": "content_block_delta", "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": '{"command": "' + LONE + '"}'},
        },
        {"type": "content_block_stop", "index": 0},
        stop="end_turn",
    )  # fmt: skip
    pipeline = toolwire.Pipeline("anthropic")
    turn = await pipeline.collect(source, request=MESSAGES_REQUEST)
    assert turn.calls == ()
    (message,) = pipeline.next_messages(turn, [])
    (block,) = [b for b in message["content"] if b["type"] == "server_tool_use"]
    assert block["input"] == {}  # its pieces did not read: the start block's input


@pytest.mark.parametrize(
    "text",
    [
        '<tool_call>{"name": "write' + LONE + '", "arguments": {}}</tool_call>',
        '<tool_call>{"name": "write", "arguments": {"a' + LONE + '": 1}}</tool_call>',
        "<tool_call>\n<function=write>\n<parameter=a>\n" + LONE + "\n</parameter>\n</function>\n"
        "</tool_call>",
        "<tool_call>write<arg_key>a</arg_key><arg_value>" + LONE + "</arg_value></tool_call>",
        '<|python_tag|>{"name": "write", "parameters": {"a": "' + LONE + '"}}',
        '[TOOL_CALLS][{"name": "write", "arguments": {"a": "' + LONE + '"}}]',
        '[TOOL_CALLS]write[ARGS]{"a": "' + LONE + '"}',
        "[write(a='" + LONE + "')]",
    ],
    ids=["hermes-name", "hermes-key", "qwen-xml", "glm", "llama", "mistral", "mistral-args",
         "pythonic"],
)  # fmt: skip
async def test_a_call_written_in_text_with_a_lone_surrogate_never_runs(text: str) -> None:
    turn = await _collect("vllm", [chat_chunk({"role": "assistant", "content": text}, "stop")])
    assert not turn.runnable


@pytest.mark.parametrize(
    ("provider", "source"),
    [
        ("openai-chat", [{**chat_chunk({"content": "hi"}), "x" + LONE: 1}]),
        ("openai-chat", [{"id": "c", "choices": [{"index": LONE, "delta": {"content": "x"}}]}]),
        ("ollama", [{"model": "m", "message": LONE, "done": True}]),
        ("anthropic", [{"type": "message_start", "message": LONE}]),
        ("gemini", [{"candidates": LONE}]),
        ("openai-chat", [{"id": "c", "choices": _deep(1000)}]),
        ("gemini", [{"candidates": _deep(1000)}]),
        ("anthropic", [{"type": "message_start", "message": {"id": "m", "content": _deep(1000)}}]),
    ],
    ids=["chat-key", "chat-index", "ollama", "anthropic", "gemini", "chat-deep", "gemini-deep",
         "anthropic-deep"],
)  # fmt: skip
async def test_an_object_of_no_known_shape_is_an_error_event(
    provider: str, source: list[Any]
) -> None:
    turn = await _collect(provider, source)
    assert [error.kind for error in turn.errors][:1] == ["unknown_shape"]
    assert not turn.runnable


@pytest.mark.parametrize(
    ("provider", "source"),
    [
        ("openai-chat", _chat_call(_deep(3000))),
        ("ollama", _ollama_call(_deep(3000))),
        ("gemini", _gemini_call(_deep(3000))),
    ],
)
async def test_arguments_nested_past_the_recursion_limit_are_a_rejected_call(
    provider: str, source: list[Any]
) -> None:
    turn = await _collect(provider, source)
    (call,) = turn.calls
    assert call.verdict is not None
    assert (call.verdict.outcome, call.verdict.reason) == ("rejected", "not_json")
    assert call.verdict.detail is not None
    assert "nested deeper than" in call.verdict.detail


async def test_a_gemini_sdk_object_pydantic_cannot_write_is_an_error_event() -> None:
    from google.genai.types import GenerateContentResponse

    chunk = GenerateContentResponse.model_validate(_gemini_call(_deep(300))[0])
    turn = await _collect("gemini", [chunk])
    assert [error.kind for error in turn.errors] == ["unknown_shape"]


async def test_a_recorded_block_nested_past_the_recursion_limit_is_replayed() -> None:
    source = _anthropic(
        {
            "type": "content_block_start", "index": 0,
            "content_block": {"type": "tool_use", "id": "t1", "name": "write", "input": {},
                              "caller": _deep(1000)},
        },
        {
            "type": "content_block_delta", "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": '{"a": 1}'},
        },
        {"type": "content_block_stop", "index": 0},
    )  # fmt: skip
    pipeline = toolwire.Pipeline("anthropic")
    turn = await pipeline.collect(source, request=MESSAGES_REQUEST)
    result = toolwire.ToolResult(call_id="t1", name="write", content="ok", status="ok")
    assistant, _ = pipeline.next_messages(turn, [result])
    (use,) = [block for block in assistant["content"] if block["type"] == "tool_use"]
    assert use["input"] == {"a": 1}
    assert json_text(use["caller"]) == json_text(_deep(1000))  # (== recurses too)


async def test_a_tool_named_with_a_lone_surrogate_is_judged_without_the_cache() -> None:
    tool = {"type": "function", "function": {"name": "w" + LONE, "parameters": {"type": "object"}}}
    request = {"model": "m", "messages": [], "tools": [tool]}
    turn = await _collect("openai-chat", [chat_chunk({"content": "hi"}, "stop")], request)
    assert turn.text == "hi"


@pytest.mark.parametrize("raw", [None, 1, {"a": 1}, b'{"a": 1}', ['{"a": 1}']])
def test_the_judge_takes_only_text(raw: Any) -> None:
    with pytest.raises(ConfigurationError, match="raw must be the arguments' text"):
        parse_arguments(raw, tool="write")


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@settings(deadline=None)
@given(_JSON)
def test_json_text_is_msgspec_s_text_when_msgspec_can_write_it(value: Any) -> None:
    from toolwire.core import json_text as module

    assert module._written(value) == json_text(value)


def test_json_text_keeps_a_lone_surrogate_and_writes_any_depth() -> None:
    assert json_text({"a": LONE}) == '{"a":"' + LONE + '"}'
    assert json_string(LONE) == '"' + LONE + '"'
    deep = json_text(_deep(5000))
    assert deep.startswith('{"a":' * 3)
    assert deep.endswith("}" * 3)
    assert len(deep) == len('{"a":') * 5000 + len('"x"') + 5000


class _Text(str):
    """A str subclass, as an SDK or a caller may hand one (msgspec reads only exact str)."""


@pytest.mark.parametrize(
    ("provider", "source", "request_body"),
    [
        ("openai-chat", _chat_call(_Text('{"a": 1}')), REQUEST),
        ("openai-chat", _chat_call({_Text("a"): _Text("x")}), REQUEST),
        (
            "anthropic",
            _anthropic(
                {
                    "type": "content_block_start", "index": 0,
                    "content_block": {"type": "tool_use", "id": "t1", "name": "write",
                                      "input": {}},
                },
                {
                    "type": "content_block_delta", "index": 0,
                    "delta": {"type": "input_json_delta", "partial_json": _Text('{"a": 1}')},
                },
                {"type": "content_block_stop", "index": 0},
            ),
            MESSAGES_REQUEST,
        ),
    ],
    ids=["chat-text", "chat-object", "anthropic"],
)  # fmt: skip
async def test_a_str_subclass_is_read_as_the_text_it_holds(
    provider: str, source: list[Any], request_body: Any
) -> None:
    turn = await _collect(provider, source, request_body)
    (call,) = turn.calls
    assert call.verdict is not None
    assert call.verdict.outcome == "ok"
    assert type(call.arguments_raw) is str
    assert parse_arguments(_Text('{"a": 1}'), tool="write").arguments == {"a": 1}


@pytest.mark.parametrize("arguments", [{"a": object()}, {"a": {"b": _Text}}])
async def test_an_arguments_object_json_cannot_hold_never_runs(arguments: Any) -> None:
    """Only a caller's own dict can hold these (no JSON reads as them): written as their
    ``repr``, which is no JSON, so the judge rejects the call instead of running a guess."""
    turn = await _collect("openai-chat", _chat_call(arguments))
    (call,) = turn.calls
    assert call.verdict is not None
    assert (call.verdict.outcome, call.verdict.reason) == ("rejected", "not_json")


@pytest.mark.parametrize("levels", [1000, 3000])
async def test_a_responses_event_nested_past_the_recursion_limit_is_an_error_event(
    levels: int,
) -> None:
    event = {"type": "response.created", "response": {"id": "r", "metadata": _deep(levels)}}
    turn = await _collect("openai-responses", [event])
    assert turn.errors
    assert not turn.runnable


def test_a_history_nested_past_the_recursion_limit_is_a_history_error() -> None:
    messages = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "extra": _deep(3000)},
    ]
    with pytest.raises(toolwire.HistoryError, match="nests too deeply"):
        toolwire.Pipeline("openai-chat").repair_history(messages)


@pytest.mark.parametrize(
    "arguments",
    [{"a": float("nan")}, {"a": [float("inf")]}, {"a": {"b": -float("inf")}}],
    ids=["nan", "inf", "-inf"],
)
async def test_nan_and_the_infinities_in_an_arguments_object_are_never_run_as_null(
    arguments: Any,
) -> None:
    """``json.loads`` (the SDKs') reads ``NaN`` and ``Infinity``; msgspec writes them as
    ``null``, a value the model never sent. The call is rejected, as the same text is."""
    for provider, source in (
        ("openai-chat", _chat_call(arguments)),
        ("ollama", _ollama_call(arguments)),
        ("gemini", _gemini_call(arguments)),
    ):
        turn = await _collect(provider, source)
        (call,) = turn.calls
        assert call.verdict is not None
        assert (call.verdict.outcome, call.verdict.reason) == ("rejected", "not_json"), provider


async def test_a_real_ollama_object_with_nan_is_a_rejected_call() -> None:
    import ollama

    line = json.loads(json.dumps(_ollama_call(None)[0]).replace("null", '{"a": NaN}', 1))
    turn = await _collect("ollama", [ollama.ChatResponse.model_validate(line)])
    (call,) = turn.calls
    assert call.verdict is not None
    assert call.verdict.reason == "not_json"


@pytest.mark.parametrize("key", [None, frozenset(), (1, 2), True])
def test_a_key_json_has_no_form_for_is_no_json_and_no_bare_key(key: Any) -> None:
    text = json_text({key: "x"})
    assert parse_arguments(text, tool="write").reason == "not_json"


async def test_a_call_id_no_request_could_carry_gets_an_id_of_toolwire_s() -> None:
    """A lone surrogate in a call id: the call may run (its arguments are fine), but its id
    goes back with the result in the next request, which httpx could not encode."""
    source = _chat_call('{"a": 1}')
    source[0]["choices"][0]["delta"]["tool_calls"][0]["id"] = "call_" + LONE
    pipeline = toolwire.Pipeline("openai-chat")
    turn = await pipeline.collect(source, request=REQUEST)
    (call,) = turn.calls
    assert call.provider_id == "call_" + LONE
    assert call.call_id.isascii()
    assert call.verdict is not None
    assert call.verdict.outcome == "ok"
    result = toolwire.ToolResult(call_id=call.call_id, name="write", content="ok", status="ok")
    json.dumps(pipeline.next_messages(turn, [result])).encode()  # what a request must carry


async def test_a_gemini_signature_given_as_a_str_subclass_is_replayed() -> None:
    content = {"role": "model", "parts": [
        {"functionCall": {"name": "write", "args": {"a": 1}}, "thoughtSignature": _Text("c2ln")},
    ]}  # fmt: skip
    chunk = {"candidates": [{"content": content, "finishReason": "STOP"}]}
    turn = await _collect("gemini", [chunk])
    (call,) = turn.calls
    assert call.verdict is not None
    assert call.verdict.outcome == "ok"
    assert "c2ln" in json.dumps([*turn.provider_content])
