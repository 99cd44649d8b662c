"""The framework matrix's scripted upstream plays what ``upstream.py`` says, on each endpoint.

The matrix's verdicts rest on it: a fault that is not played, or a retry that is not answered
with a clean call, would make a cell say nothing. Checked here with plain HTTP, no framework.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from .matrix import outcome
from .upstream import (
    ANSWER,
    ASK,
    GOOD,
    HISTORY_REFUSAL,
    MARKUP,
    UNABLE,
    FrameworkUpstream,
    model_of,
    running_framework_upstream,
)

SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
CHAT_TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": SCHEMA}}]
MESSAGES_TOOLS = [{"name": "get_weather", "input_schema": SCHEMA}]
RESPONSES_TOOLS = [{"type": "function", "name": "get_weather", "parameters": SCHEMA}]


@pytest.fixture(scope="module")
def server() -> Iterator[FrameworkUpstream]:
    with running_framework_upstream() as running:
        yield running


def _chat(
    server: FrameworkUpstream, fault: str, messages: list[Any], **extra: Any
) -> httpx.Response:
    body = {"model": model_of(fault), "messages": messages, "tools": CHAT_TOOLS, **extra}
    return httpx.post(f"{server.base_url}/v1/chat/completions", json=body, timeout=10)


def _message(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    choice: dict[str, Any] = response.json()["choices"][0]
    return choice


ASKED = [{"role": "user", "content": ASK}]


@pytest.mark.parametrize(
    ("fault", "arguments", "finish"),
    [
        ("length", '{"city": "Par', "length"),
        ("length_as_tool_calls", '{"city": "Par', "tool_calls"),
        ("trailing_comma", '{"city": "Paris",}', "tool_calls"),
        ("wrong_type", '{"city": 42}', "tool_calls"),
        ("clean", json.dumps(GOOD), "tool_calls"),
    ],
)
def test_each_structured_fault_is_the_first_turn(
    server: FrameworkUpstream, fault: str, arguments: str, finish: str
) -> None:
    choice = _message(_chat(server, fault, ASKED))
    assert choice["finish_reason"] == finish
    assert choice["message"]["tool_calls"][0]["function"]["arguments"] == arguments


def test_the_markup_fault_is_text(server: FrameworkUpstream) -> None:
    choice = _message(_chat(server, "text_markup", ASKED))
    assert choice["message"]["content"] == MARKUP
    assert "tool_calls" not in choice["message"]


def test_the_parser_fault_is_llama_servers_500_whole_and_in_band_streamed(
    server: FrameworkUpstream,
) -> None:
    whole = _chat(server, "parser_500", ASKED)
    assert whole.status_code == 500
    assert whole.json()["error"]["message"] == f"Failed to parse input at pos 0: {MARKUP}"
    streamed = _chat(server, "parser_500", ASKED, stream=True)
    assert streamed.status_code == 200
    last = streamed.text.strip().split("\n\n")[-1]
    assert json.loads(last.removeprefix("data: "))["error"]["code"] == 500
    assert "[DONE]" not in streamed.text


def test_feedback_gets_a_clean_call_and_the_result_gets_the_answer(
    server: FrameworkUpstream,
) -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}
    rejected = [
        *ASKED,
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "city is required"},
    ]
    retried = _message(_chat(server, "wrong_type", rejected))
    assert json.loads(retried["message"]["tool_calls"][0]["function"]["arguments"]) == GOOD
    folded = [{"role": "user", "content": f"{ASK}\nError:\nArgument city has type 'integer'"}]
    assert _message(_chat(server, "wrong_type", folded))["finish_reason"] == "tool_calls"
    reported = [
        *rejected[:2],
        {"role": "tool", "tool_call_id": "c1", "content": "WEATHER-REPORT x"},
    ]
    answered = _message(_chat(server, "wrong_type", reported))
    assert answered["message"]["content"] == ANSWER
    assert answered["finish_reason"] == "stop"


def test_smolagents_final_answer_and_a_request_without_the_tool(server: FrameworkUpstream) -> None:
    final = {"type": "function", "function": {"name": "final_answer", "parameters": {}}}
    reported = [*ASKED, {"role": "user", "content": "Observation: WEATHER-REPORT Paris"}]
    body = {"model": model_of("clean"), "messages": reported, "tools": [*CHAT_TOOLS, final]}
    response = httpx.post(f"{server.base_url}/v1/chat/completions", json=body, timeout=10)
    call = _message(response)["message"]["tool_calls"][0]["function"]
    assert (call["name"], json.loads(call["arguments"])) == ("final_answer", {"answer": ANSWER})
    bare = {"model": model_of("wrong_type"), "messages": ASKED}
    response = httpx.post(f"{server.base_url}/v1/chat/completions", json=bare, timeout=10)
    assert _message(response)["message"]["content"] == UNABLE


def test_an_earlier_broken_call_is_refused_as_llama_server_refuses_it(
    server: FrameworkUpstream,
) -> None:
    broken = {
        "id": "p",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Par'},
    }
    history = [
        *ASKED,
        {"role": "assistant", "content": None, "tool_calls": [broken]},
        {"role": "tool", "tool_call_id": "p", "content": "cut"},
    ]
    refused = _chat(server, "history_refusal", history)
    assert refused.status_code == 500
    assert refused.json()["error"]["message"] == HISTORY_REFUSAL
    # On /v1/messages a tool_use input that is no object becomes arguments that are no object.
    body = {
        "model": model_of("history_refusal"),
        "max_tokens": 64,
        "tools": MESSAGES_TOOLS,
        "messages": [
            {"role": "user", "content": ASK},
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "p", "name": "get_weather", "input": '{"city": "Par'}
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "p", "content": "cut"}],
            },
        ],
    }
    assert httpx.post(f"{server.base_url}/v1/messages", json=body, timeout=10).status_code == 500


def test_a_whole_messages_body_cannot_hold_a_cut_call_so_it_is_text(
    server: FrameworkUpstream,
) -> None:
    body = {
        "model": model_of("length"),
        "max_tokens": 64,
        "tools": MESSAGES_TOOLS,
        "messages": ASKED,
    }
    whole = httpx.post(f"{server.base_url}/v1/messages", json=body, timeout=10).json()
    assert whole["stop_reason"] == "max_tokens"
    assert whole["content"] == [
        {"type": "text", "text": '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Par'}
    ]
    streamed = httpx.post(
        f"{server.base_url}/v1/messages", json={**body, "stream": True}, timeout=10
    )
    assert '"partial_json": "Par"' in streamed.text  # streamed, the cut call is a tool_use
    assert '"stop_reason": "max_tokens"' in streamed.text


def test_a_responses_cut_is_an_incomplete_response(server: FrameworkUpstream) -> None:
    body = {"model": model_of("length"), "input": ASK, "tools": RESPONSES_TOOLS}
    whole = httpx.post(f"{server.base_url}/v1/responses", json=body, timeout=10).json()
    assert whole["status"] == "incomplete"
    assert whole["incomplete_details"] == {"reason": "max_output_tokens"}
    assert whole["output"][0]["arguments"] == '{"city": "Par'


def test_an_unknown_model_or_path_is_a_404(server: FrameworkUpstream) -> None:
    body = {"model": "gpt-4o", "messages": ASKED}
    assert (
        httpx.post(f"{server.base_url}/v1/chat/completions", json=body, timeout=10).status_code
        == 404
    )
    body = {"model": model_of("clean"), "messages": ASKED}
    assert httpx.post(f"{server.base_url}/v1/embeddings", json=body, timeout=10).status_code == 404


def _result(**fields: Any) -> dict[str, Any]:
    return {"ran": [], "answer": None, "error": None, "skipped": None, **fields}


def test_outcome_names_the_worst_first() -> None:
    assert outcome(_result(ran=[GOOD], answer=ANSWER)) == "ok"
    assert outcome(_result(ran=[{"city": "Par"}], answer=ANSWER)) == "BAD ARGS"
    assert outcome(_result(ran=[GOOD, {"city": 42}], error="X: y")) == "BAD ARGS"
    assert outcome(_result(ran=[GOOD, GOOD], answer=ANSWER)) == "ran twice"
    assert outcome(_result(error="InternalServerError: 500")) == "InternalServerError"
    assert outcome(_result(answer=MARKUP)) == "no tool"
    assert outcome(_result(answer="  ")) == "no answer"
    assert outcome(_result(ran=[GOOD], answer="something else")) == "no answer"
    assert outcome(_result(skipped="takes no history")) == "n/a"
