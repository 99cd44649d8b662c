"""A request whose history holds broken earlier calls, in every healed format but Chat's
(``test_transport_history_and_parser_errors.py`` has Chat's), and what the upstream must get.

Each history holds two earlier calls a server refuses to read, answered, then a user turn;
each scripted server of ``tests/e2e`` refuses it as the real one does (the Messages API's
``tool_use.input: Input should be a valid dictionary``; Responses arguments that are no JSON
object, which vLLM refuses with ``json.loads``'s ``Expecting ',' delimiter``; Gemini's
``functionCall.args`` that is no ``Struct``; Ollama's ``cannot unmarshal string``). The
transport and the proxy share this table.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import httpx
from e2e.anthropic_server import Reply as MessagesReply
from e2e.anthropic_server import messages_reply
from e2e.gemini_server import MODEL as GEMINI_MODEL
from e2e.gemini_server import SENTINEL, text_reply
from e2e.loopback import Reply
from e2e.ollama_server import chat_line, done_line, ndjson
from e2e.openai_responses_server import ReplyBuilder

import toolwire
from toolwire.adapters.history import REPAIRED_KINDS
from toolwire.heal.transport import HISTORY_REPAIRED_HEADER

#: What the repair writes in each rewritten call's result.
NOTE = "could not be sent back as it was"
CUT = '{"path": "notes.txt", "content": "hel'
MARKUP = '<tool_call>{"name": "write", "arguments": {"path": "notes.txt"}}</tool_call>'


@dataclass(frozen=True)
class BrokenHistory:
    """One format's broken request: where it goes, its body, what the response must say."""

    provider: str
    #: The path under the upstream's (or the proxy's) root.
    path: str
    body: dict[str, Any]
    #: The ``x-toolwire-history-repaired`` header the response carries.
    header: str
    #: Where the body holds its history.
    key: str
    #: The request's headers (the API key the Gemini server wants).
    headers: tuple[tuple[str, str], ...] = ()
    #: A tool that makes the request one toolwire does not heal (``None``: no tools at all).
    unhealed_tool: dict[str, Any] | None = None

    def unhealed(self) -> dict[str, Any]:
        """The request with a tool toolwire does not write back, or without tools: its
        response passes untouched, but its history fails all the same."""
        if self.unhealed_tool is None:
            return {k: v for k, v in self.body.items() if k != "tools"}
        return {**self.body, "tools": [*self.body["tools"], self.unhealed_tool]}

    def assert_repaired(self, sent: dict[str, Any]) -> None:
        """``sent`` (what the upstream received) holds the history repaired: no call a server
        refuses, each rewritten call's result saying why, the client's own results kept."""
        history = sent[self.key]
        problems = toolwire.Pipeline(self.provider).check_history(history)
        assert [p for p in problems if p.kind in REPAIRED_KINDS] == []
        assert problems == []  # and still well formed: results paired with their calls
        written = json.dumps(history)
        assert written.count(NOTE) == 2
        assert "the first result" in written
        assert "the second result" in written
        # Nothing else changed (but ``stream``, which an SDK's streaming call sets, and the
        # tools of an unhealed request).
        kept = (self.key, "stream", "tools")
        assert {k: v for k, v in sent.items() if k not in kept} == {
            k: v for k, v in self.body.items() if k not in kept
        }


WRITE_SCHEMA = {
    "type": "object",
    "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
    "required": ["path", "content"],
}

ANTHROPIC = BrokenHistory(
    provider="anthropic",
    path="/v1/messages",
    key="messages",
    header="arguments_markup=1, arguments_not_object=1",
    unhealed_tool={"type": "web_search_20250305", "name": "web_search"},
    body={
        "model": "claude-scripted",
        "max_tokens": 124,
        "tools": [{"name": "write", "input_schema": WRITE_SCHEMA}],
        "messages": [
            {"role": "user", "content": "Write hello to notes.txt"},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "toolu_1", "name": "write", "input": CUT}],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "the first result"}
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Again."},
                    {"type": "tool_use", "id": "toolu_2", "name": "write", "input": MARKUP},
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_2",
                        "content": "the second result",
                    },
                    {"type": "text", "text": "Try once more."},
                ],
            },
        ],
    },
)

RESPONSES = BrokenHistory(
    provider="openai-responses",
    path="/v1/responses",
    key="input",
    header="arguments_markup=1, arguments_not_json=1",
    unhealed_tool={"type": "web_search"},
    body={
        "model": "gpt-scripted",
        "stream": True,
        "store": False,
        "tools": [{"type": "function", "name": "write", "parameters": WRITE_SCHEMA}],
        "input": [
            {"role": "user", "content": "Write hello to notes.txt"},
            {
                "type": "function_call",
                "call_id": "call_1",
                "name": "write",
                # vLLM: 400 "Expecting ',' delimiter: line 1 column 22 (char 21)"
                "arguments": '{"path": "notes.txt" "content": "hello"}',
            },
            {"type": "function_call_output", "call_id": "call_1", "output": "the first result"},
            {"type": "function_call", "call_id": "call_2", "name": "write", "arguments": MARKUP},
            {"type": "function_call_output", "call_id": "call_2", "output": "the second result"},
            {"role": "user", "content": "Try once more."},
        ],
    },
)

GEMINI = BrokenHistory(
    provider="gemini",
    path=f"/v1beta/models/{GEMINI_MODEL}:generateContent",
    key="contents",
    header="arguments_not_object=2",
    headers=(("x-goog-api-key", "test-key"),),
    unhealed_tool={"googleSearch": {}},
    body={
        "tools": [
            {"functionDeclarations": [{"name": "write", "parametersJsonSchema": WRITE_SCHEMA}]}
        ],
        "contents": [
            {"role": "user", "parts": [{"text": "Write hello to notes.txt"}]},
            {
                "role": "model",
                "parts": [
                    {
                        "functionCall": {"name": "write", "args": CUT},
                        "thoughtSignature": SENTINEL,
                    }
                ],
            },
            {
                "role": "user",
                "parts": [
                    {
                        "functionResponse": {
                            "name": "write",
                            "response": {"result": "the first result"},
                        }
                    }
                ],
            },
            {
                "role": "model",
                "parts": [
                    {
                        "functionCall": {"name": "write", "args": ["notes.txt", "hello"]},
                        "thoughtSignature": SENTINEL,
                    }
                ],
            },
            {
                "role": "user",
                "parts": [
                    {
                        "functionResponse": {
                            "name": "write",
                            "response": {"result": "the second result"},
                        }
                    },
                    {"text": "Try once more."},
                ],
            },
        ],
    },
)

OLLAMA = BrokenHistory(
    provider="ollama",
    path="/api/chat",
    key="messages",
    header="arguments_not_object=2",
    body={
        "model": "qwen3:scripted",
        "stream": False,
        "tools": [{"type": "function", "function": {"name": "write", "parameters": WRITE_SCHEMA}}],
        "messages": [
            {"role": "user", "content": "Write hello to notes.txt"},
            {
                "role": "assistant",
                "content": "",
                # A Chat Completions client's string: Ollama's /api/chat wants an object.
                "tool_calls": [
                    {
                        "id": "call_1",
                        "function": {"name": "write", "arguments": '{"path": "notes.txt"}'},
                    }
                ],
            },
            {
                "role": "tool",
                "tool_name": "write",
                "tool_call_id": "call_1",
                "content": "the first result",
            },
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"id": "call_2", "function": {"name": "write", "arguments": CUT}}],
            },
            {
                "role": "tool",
                "tool_name": "write",
                "tool_call_id": "call_2",
                "content": "the second result",
            },
            {"role": "user", "content": "Try once more."},
        ],
    },
)


def scripted_answer(history: BrokenHistory, server: Any) -> Any:
    """The upstream's answer to ``history``'s request, in words (nothing for healing to do)."""
    if history is ANTHROPIC:
        return MessagesReply(messages_reply(server, ("text", "Done."), stop_reason="end_turn"))
    if history is RESPONSES:
        return ReplyBuilder("resp_done").message("msg_done", "Done.").completed()
    if history is GEMINI:
        return text_reply("Done.")
    return Reply(ndjson(chat_line(content="Done."), done_line()))


async def assert_repaired_through(
    http: httpx.AsyncClient,
    history: BrokenHistory,
    server: Any,
    body: dict[str, Any] | None = None,
) -> httpx.Response:
    """Send ``history``'s request (or ``body``) with ``http`` (a transport or a proxy between
    it and ``server``): answered 200, the response says what was repaired, and ``server``
    received the history repaired, refusing nothing."""
    server.script(scripted_answer(history, server))
    original = json.dumps(history.body)
    response = await http.post(history.path, json=body or history.body, headers=history.headers)
    assert response.status_code == 200, response.text
    assert response.headers[HISTORY_REPAIRED_HEADER] == history.header
    assert "Done." in response.text
    assert server.refused == []
    history.assert_repaired(server.requests[-1])
    assert json.dumps(history.body) == original  # the client's body is not changed
    return response


async def assert_repaired_through_proxy(root: str, history: BrokenHistory, server: Any) -> None:
    """:func:`assert_repaired_through` with a plain client of the proxy at ``root``."""
    async with httpx.AsyncClient(base_url=root, timeout=20) as http:
        await assert_repaired_through(http, history, server)
