"""llama-cpp-python's history: results the model can read, and the check that knows why.

Its ``chatml-function-calling`` template renders a ``role: tool`` message as a bare
``<|im_start|>tool`` line (no content), so the profile sends each result as a user message that
names the call; ``tests/demo/test_llama_prompt.py`` renders both with the server's own template.
"""

from __future__ import annotations

from typing import Any

import anyio

import toolwire
import toolwire.lowlevel
from toolwire.adapters.openai_chat.history import user_result_text
from toolwire.adapters.openai_chat.profiles import CHAT_PROFILES
from toolwire.core.results import ToolResult

ASSISTANT: dict[str, Any] = {
    "role": "assistant",
    "content": "",
    "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}}
    ],
}
USER = {"role": "user", "content": "Read it"}


def test_the_profile_says_results_go_as_user_messages() -> None:
    profile = CHAT_PROFILES["llama-cpp"]
    assert profile.tool_result_role == "user"
    assert profile.empty_assistant_content == ""
    assert profile.streams_tool_calls_only_when_forced
    assert CHAT_PROFILES["openai-compatible"].tool_result_role == "tool"
    assert CHAT_PROFILES["llama-server"].tool_result_role == "tool"


def test_results_are_user_messages_that_name_the_call() -> None:
    result = ToolResult(call_id="c1", name="read", content='it said "hi"', status="ok")
    (message,) = toolwire.lowlevel.history_format("llama-cpp").tool_result_messages([result])
    assert message == {
        "role": "user",
        "tool_call_id": "c1",
        "content": 'Result of tool call `read` (id c1):\nit said "hi"',
    }
    assert message["content"] == user_result_text(result)
    (plain,) = toolwire.lowlevel.history_format("openai-compatible").tool_result_messages([result])
    assert plain == {"role": "tool", "tool_call_id": "c1", "content": 'it said "hi"'}


def test_the_check_pairs_user_results_with_their_calls() -> None:
    result = {"role": "user", "tool_call_id": "c1", "content": "Result of tool call ..."}
    assert toolwire.Pipeline("llama-cpp").check_history([USER, ASSISTANT, result]) == []
    # Without a result the call is unanswered, as with any provider.
    kinds = [p.kind for p in toolwire.Pipeline("llama-cpp").check_history([USER, ASSISTANT, USER])]
    assert kinds == ["unanswered_call"]
    # For a provider whose results are tool messages, a user message is no result.
    problems = toolwire.Pipeline("openai-chat").check_history([USER, ASSISTANT, result])
    kinds = [p.kind for p in problems]
    assert kinds == ["unanswered_call"]


def test_a_tool_message_is_a_result_the_model_never_reads() -> None:
    tool = {"role": "tool", "tool_call_id": "c1", "content": "x"}
    problems = toolwire.Pipeline("llama-cpp").check_history([USER, ASSISTANT, tool])
    assert [(p.kind, p.index, p.call_id) for p in problems] == [("result_hidden", 2, "c1")]
    assert "user message" in problems[0].detail
    assert toolwire.Pipeline("openai-compatible").check_history([USER, ASSISTANT, tool]) == []


def test_an_empty_body_says_to_name_the_tool() -> None:
    turn = anyio.run(lambda: toolwire.collect(b"", "llama-cpp"))
    (error,) = turn.errors
    assert error.kind == "empty_response"
    assert error.message.endswith("name the function in tool_choice")
    assert turn.stop_reason == "error"
    assert not turn.truncated
    other = anyio.run(lambda: toolwire.collect(b"", "openai-compatible"))
    assert "tool_choice" not in other.errors[0].message


def test_keep_alive_pings_alone_also_say_to_name_the_tool() -> None:
    # Under load llama-cpp-python pings (sse-starlette, every 15 s) before its empty answer.
    pings = b": ping - 2026-12-02 06:51:16.844794+00:00\r\n\r\n"
    turn = anyio.run(lambda: toolwire.collect(pings, "llama-cpp"))
    (error,) = turn.errors
    assert error.kind == "empty_response"
    assert "keep-alive pings alone" in error.message
    assert error.message.endswith("name the function in tool_choice")
