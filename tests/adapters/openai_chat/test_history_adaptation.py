"""A client's Chat request adapted to its server's profile: one table of cases per profile.

Each row is a message as agents send it (the openai SDK's shapes) and what reaches the server.
Only ``llama-cpp`` adapts today (what the real llama-cpp-python server refused or hid, seen in
``tests/demo/test_real_agents.py``); every other profile sends the body byte for byte.
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

import toolwire
from toolwire.adapters.openai_chat.adapt import adapt_body, adapt_messages
from toolwire.adapters.openai_chat.healing import plan_request
from toolwire.adapters.openai_chat.profiles import CHAT_PROFILES

LLAMA = CHAT_PROFILES["llama-cpp"]
CALL = {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}
ASKED = {"role": "user", "content": "Weather in Paris?"}
RESULT = "Result of tool call `get_weather` (id call_1):\nsunny"

# (case, the client's message after ASKED and an assistant with CALL, what goes up, kinds)
LLAMA_CASES: list[tuple[str, dict[str, Any], dict[str, Any], dict[str, int]]] = [
    (
        "assistant content null",
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
        {"role": "assistant", "content": "", "tool_calls": [CALL]},
        {"assistant_content": 1},
    ),
    (
        "assistant content missing next to calls",
        {"role": "assistant", "tool_calls": [CALL]},
        {"role": "assistant", "tool_calls": [CALL], "content": ""},
        {"assistant_content": 1},
    ),
    (
        "assistant function_call null (the SDK's streaming helper)",
        {"role": "assistant", "content": "", "function_call": None, "tool_calls": [CALL]},
        {"role": "assistant", "content": "", "tool_calls": [CALL]},
        {"null_key": 1},
    ),
    (
        "tool result",
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
        {"role": "user", "tool_call_id": "call_1", "content": RESULT},
        {"tool_result_role": 1},
    ),
    (
        "tool result as text parts",
        {"role": "tool", "tool_call_id": "call_1", "content": [{"type": "text", "text": "sunny"}]},
        {"role": "user", "tool_call_id": "call_1", "content": RESULT},
        {"tool_result_role": 1},
    ),
    (
        "assistant with text and calls: accepted as is",
        {"role": "assistant", "content": "Looking.", "tool_calls": [CALL]},
        {"role": "assistant", "content": "Looking.", "tool_calls": [CALL]},
        {},
    ),
    (
        "user message: as is",
        {"role": "user", "content": "thanks"},
        {"role": "user", "content": "thanks"},
        {},
    ),
]


@pytest.mark.parametrize(
    ("message", "expected", "kinds"),
    [pytest.param(m, e, k, id=case) for case, m, e, k in LLAMA_CASES],
)
def test_llama_cpp_adapts_what_the_server_refuses_or_hides(
    message: dict[str, Any], expected: dict[str, Any], kinds: dict[str, int]
) -> None:
    call = {"role": "assistant", "content": "", "tool_calls": [CALL]}
    history = [ASKED, call, message]
    before = msgspec.json.encode(history)
    adapted, counts = adapt_messages(history, LLAMA)
    assert adapted == [ASKED, call, expected]
    assert counts == kinds
    assert msgspec.json.encode(history) == before  # the input is never modified
    assert adapted[0] is ASKED  # what needs nothing is the same object
    if not kinds:
        assert adapted[2] is message


@pytest.mark.parametrize("provider", sorted(set(CHAT_PROFILES) - {"llama-cpp"}))
def test_every_other_profile_sends_the_body_byte_for_byte(provider: str) -> None:
    history = [ASKED, *(m for _, m, _, _ in LLAMA_CASES)]
    body = {"model": "m", "messages": history, "tools": [{"type": "function"}], "stream": True}
    body["stream_options"] = {"include_usage": True}
    assert adapt_body(body, CHAT_PROFILES[provider]) == (body, {})
    healed = plan_request(msgspec.json.encode(body), CHAT_PROFILES[provider])
    assert healed is not None
    assert healed.content is None
    assert healed.adapted == {}
    assert not healed.whole_upstream


def test_a_streamed_auto_request_is_asked_whole_on_llama_cpp() -> None:
    body = {
        "model": "m",
        "messages": [ASKED],
        "tools": [{"type": "function", "function": {"name": "get_weather"}}],
        "tool_choice": "auto",
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    plan = plan_request(msgspec.json.encode(body), LLAMA)
    assert plan is not None
    assert plan.streaming
    assert plan.whole_upstream
    assert plan.adapted == {"stream": 1}
    assert plan.client_wants_usage
    assert plan.body["stream"] is False
    assert "stream_options" not in plan.body
    assert plan.content is not None
    assert msgspec.json.decode(plan.content) == plan.body


@pytest.mark.parametrize(
    "tool_choice",
    [None, "none", {"type": "function", "function": {"name": "get_weather"}}],
)
def test_a_request_the_server_streams_stays_streamed(tool_choice: object) -> None:
    body: dict[str, Any] = {"model": "m", "messages": [ASKED], "tools": [{}], "stream": True}
    if tool_choice is not None:
        body["tool_choice"] = tool_choice
    plan = plan_request(msgspec.json.encode(body), LLAMA)
    assert plan is not None
    assert not plan.whole_upstream
    assert plan.body["stream"] is True


def test_a_request_without_tools_is_adapted_but_not_healed() -> None:
    body = {
        "model": "m",
        "stream": True,
        "tool_choice": "auto",
        "messages": [ASKED, {"role": "assistant", "content": None, "tool_calls": [CALL]}],
    }
    plan = plan_request(msgspec.json.encode(body), LLAMA)
    assert plan is not None
    assert not plan.heal
    assert plan.adapted == {"assistant_content": 1}
    assert plan.body["stream"] is True  # not healed: nothing could stream a whole answer back
    assert plan_request(msgspec.json.encode({**body, "messages": [ASKED]}), LLAMA) is None


def test_pipeline_adapt_messages_takes_the_sdk_message_objects() -> None:
    from openai.types.chat import ChatCompletionMessage

    message = ChatCompletionMessage.model_validate(
        {"role": "assistant", "content": None, "tool_calls": [CALL]}
    )
    result = {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}
    adapted = toolwire.Pipeline("llama-cpp").adapt_messages([ASKED, message, result])
    assert adapted == [
        ASKED,
        {"role": "assistant", "content": "", "tool_calls": [CALL]},
        {"role": "user", "tool_call_id": "call_1", "content": RESULT},
    ]
    assert toolwire.Pipeline("llama-cpp").check_history(adapted) == []
    same = [ASKED, message, result]
    assert toolwire.Pipeline("openai-chat").adapt_messages(same) == same
    assert toolwire.Pipeline("anthropic").adapt_messages(same) == same
