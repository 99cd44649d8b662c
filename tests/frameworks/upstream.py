"""The framework matrix's model server: one tool, ``get_weather(city)``, and the faults that a
local server's model and tool parser make, on every endpoint a local server serves.

llama-server answers ``/v1/chat/completions``, ``/v1/messages`` and ``/v1/responses`` with one
model and one tool parser. This server plays one model that answers "What is the weather in
Paris?" with a call of ``get_weather``; each request's ``model`` names the fault it plays
(``weather-<fault>``, :data:`FAULTS`), so that any framework, unchanged, can be pointed at it:

- the first turn is the fault (:data:`FAULT_TURNS`);
- a turn after any feedback (toolwire's rejection of the call, or the framework's own error
  message, or any earlier call in the history: an assistant or tool message, a second user
  message, or a user message that says "error", as smolagents folds its error into the task's)
  is a clean call: the model corrects itself when told what was wrong, so a correct run is
  possible;
- a turn after the tool's result (its text holds :data:`REPORT_MARK`) is the answer
  (:data:`ANSWER`); when the request offers smolagents' ``final_answer`` tool, the answer is a
  call of it, as that framework asks its model to end;
- a request that does not offer ``get_weather`` (AutoGen's reflection on a tool's result) is
  answered in words: the answer after the tool's result, :data:`UNABLE` before it.

Each request's history is first read the way llama-server reads it: Messages and Responses
histories are converted to Chat messages (``heal.local_server.chat_view``, from llama.cpp
``tools/server/server-chat.cpp``), and an earlier call whose arguments are not a JSON object is
refused with llama-server's HTTP 500 ``Failed to parse tool call arguments as JSON`` (its
template parses every earlier call's arguments: ``adapters/openai_chat/llama_server_errors.py``
cites the source). That is the "history refusal" fault: a run that starts from a conversation
whose earlier call the model broke.

The replies take each endpoint's shapes, streamed or whole as the request asks. A whole
Messages body holds a call's ``input`` as an object, so a call whose arguments are no object
(cut, trailing comma) cannot be written in one: there the server leaves the model's markup in
the text, as a server whose parser could not read a call does. llama-server's tool-parser
failure (``parser_500``) is its pre-b9821 words, which quote the output from the failing
position (``Failed to parse input at pos 0: <tool_call>...``): an HTTP 500 on a whole request,
an error in band after the stream began (``tests/e2e/llama_server_streams.py`` cites where).

Written with the standard library; it shares no code with toolwire. Every request is kept in
:attr:`FrameworkUpstream.log` (endpoint, fault, what was answered).
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from typing import Any, Literal

from e2e.loopback import NO_CACHE, Loopback, LoopbackHandler, ScriptedServer
from e2e.openai_responses_server import ReplyBuilder
from heal.local_server import ENDPOINTS, Endpoint, chat_view

__all__ = [
    "ANSWER",
    "ASK",
    "FAULTS",
    "FAULT_TURNS",
    "GOOD",
    "PRIOR_CALL",
    "REPORT_MARK",
    "FrameworkUpstream",
    "ModelTurn",
    "model_of",
    "running_framework_upstream",
]

TOOL = "get_weather"
ASK = "What is the weather in Paris?"
#: The only arguments a correct run may run the tool with.
GOOD = {"city": "Paris"}
#: The tool's result starts with this: a request whose history holds it gets the answer.
REPORT_MARK = "WEATHER-REPORT"
ANSWER = "It is 18 C and clear in Paris."
#: The model's words when asked without the tool before the tool ran.
UNABLE = "I could not get the weather for Paris."
#: What the model wrote when its call was cut at the output-token limit.
CUT = '{"city": "Par'
#: The call a model wrote in its own (Qwen / Hermes) markup.
MARKUP = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
#: The earlier call of the "history refusal" fault, as the client kept it: cut.
PRIOR_CALL = {"id": "call_prior", "name": TOOL, "arguments": CUT}

Finish = Literal["stop", "length", "tool_calls"]


@dataclass(frozen=True)
class ModelTurn:
    """What the model (and the server's parser) made of one turn."""

    text: str = ""
    #: A structured call's arguments, as the parser passed them on (``None``: no call).
    arguments: str | None = None
    finish: Finish = "stop"
    #: llama-server's tool-parser failure: its message (an HTTP 500, or in band once streaming).
    error: str | None = None
    #: The call's tool (``final_answer`` for smolagents' answer).
    tool: str = TOOL


CLEAN = ModelTurn(arguments=json.dumps(GOOD), finish="tool_calls")
#: Each fault's first turn; ``history_refusal``'s first turn is the earlier broken call.
FAULT_TURNS: dict[str, ModelTurn] = {
    "length": ModelTurn(arguments=CUT, finish="length"),
    "length_as_tool_calls": ModelTurn(arguments=CUT, finish="tool_calls"),
    "trailing_comma": ModelTurn(arguments='{"city": "Paris",}', finish="tool_calls"),
    "wrong_type": ModelTurn(arguments='{"city": 42}', finish="tool_calls"),
    "text_markup": ModelTurn(text=MARKUP),
    "parser_500": ModelTurn(error=f"Failed to parse input at pos 0: {MARKUP}"),
    "clean": CLEAN,
    "history_refusal": CLEAN,
}
FAULTS: tuple[str, ...] = tuple(FAULT_TURNS)
#: What each fault is, in the words of docs/frameworks.md.
FAULT_TITLES: dict[str, str] = {
    "length": "call cut, `length`",
    "length_as_tool_calls": "call cut, `tool_calls`",
    "trailing_comma": "trailing comma",
    "wrong_type": '`{"city": 42}`',
    "text_markup": "`<tool_call>` text",
    "parser_500": "parser 500",
    "clean": "clean call",
    "history_refusal": "history refusal",
}

HISTORY_REFUSAL = (
    "Failed to parse tool call arguments as JSON: [json.exception.parse_error.101] parse error "
    "at line 1, column 14: syntax error while parsing value - invalid string: missing closing "
    "quote; last read: '\"Par'"
)


def model_of(fault: str) -> str:
    """The model name a framework is given to play ``fault``."""
    return f"weather-{fault}"


@dataclass
class FrameworkUpstream(ScriptedServer[None]):
    """Every request: ``(endpoint, fault, what was answered)``."""

    log: list[tuple[str, str, bool, str]] = field(default_factory=list)
    _ids: itertools.count[int] = field(default_factory=itertools.count)

    def note(self, endpoint: str, fault: str, streamed: bool, answered: str) -> None:
        with self._lock:
            self.log.append((endpoint, fault, streamed, answered))

    def next_id(self) -> int:
        with self._lock:
            return next(self._ids)


def _texts(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(
            _texts(part.get("text", part.get("content")))
            for part in content
            if isinstance(part, dict)
        )
    return ""


def next_turn(fault: str, view: list[dict[str, Any]], tools: list[str]) -> ModelTurn:
    """The model's turn for a request (module docstring)."""
    said = [m for m in view if m.get("role") not in ("assistant", "system", "developer")]
    reported = any(REPORT_MARK in _texts(m.get("content")) for m in said)
    if TOOL not in tools:
        # Asked without the tool (AutoGen's reflection on a tool's result): words only.
        return ModelTurn(text=ANSWER if reported else UNABLE)
    if reported:
        if "final_answer" in tools:
            return ModelTurn(
                arguments=json.dumps({"answer": ANSWER}), finish="tool_calls", tool="final_answer"
            )
        return ModelTurn(text=ANSWER)
    users = [m for m in view if m.get("role") == "user"]
    # smolagents folds its error message into the task's user message ("Error: ...").
    told = any("error" in _texts(m.get("content")).lower() for m in users)
    if told or len(users) > 1 or any(m.get("role") in ("assistant", "tool") for m in view):
        return CLEAN
    return FAULT_TURNS[fault]


def history_refusal(view: list[dict[str, Any]]) -> str | None:
    """llama-server's refusal of an earlier call whose arguments are not a JSON object."""
    for message in view:
        for call in message.get("tool_calls") or ():
            try:
                arguments = json.loads(call["function"]["arguments"])
            except (ValueError, TypeError):
                return HISTORY_REFUSAL
            if not isinstance(arguments, dict):
                return HISTORY_REFUSAL
    return None


def tool_names(endpoint: Endpoint, request: dict[str, Any]) -> list[str]:
    names = []
    for tool in request.get("tools") or ():
        function = tool.get("function") if endpoint == "chat" else tool
        names.append(str((function or {}).get("name", "")))
    return names


def _error_object(message: str) -> dict[str, Any]:
    return {"code": 500, "message": message, "type": "server_error"}


# -- Chat Completions ------------------------------------------------------------------------


def _chat_chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-weather",
        "object": "chat.completion.chunk",
        "created": 1796028372,
        "model": "local-model",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
    }


def _chat_stream(turn: ModelTurn, call_id: str, usage: bool) -> list[bytes]:
    chunks: list[dict[str, Any]] = [_chat_chunk({"role": "assistant", "content": None})]
    if turn.error is not None:
        chunks.append({"error": _error_object(turn.error)})
        return [b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks]
    for start in range(0, len(turn.text), 6):
        chunks.append(_chat_chunk({"content": turn.text[start : start + 6]}))
    if turn.arguments is not None:
        head = {"index": 0, "id": call_id, "type": "function"}
        chunks.append(
            _chat_chunk(
                {"tool_calls": [{**head, "function": {"name": turn.tool, "arguments": ""}}]}
            )
        )
        for start in range(0, len(turn.arguments), 5):
            piece = turn.arguments[start : start + 5]
            chunks.append(
                _chat_chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
            )
    chunks.append(_chat_chunk({}, turn.finish))
    if usage:
        chunks.append({**_chat_chunk({}), "choices": [], "usage": _chat_usage()})
    framed = [b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks]
    return [*framed, b"data: [DONE]\n\n"]


def _chat_usage() -> dict[str, int]:
    return {"prompt_tokens": 40, "completion_tokens": 20, "total_tokens": 60}


def _chat_whole(turn: ModelTurn, call_id: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": turn.text or None}
    if turn.arguments is not None:
        function = {"name": turn.tool, "arguments": turn.arguments}
        message["tool_calls"] = [{"id": call_id, "type": "function", "function": function}]
    return {
        "id": "chatcmpl-weather",
        "object": "chat.completion",
        "created": 1796028372,
        "model": "local-model",
        "choices": [
            {"index": 0, "message": message, "logprobs": None, "finish_reason": turn.finish}
        ],
        "usage": _chat_usage(),
    }


# -- Anthropic Messages ----------------------------------------------------------------------

_STOP_REASON: dict[Finish, str] = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
}


def _as_messages_turn(turn: ModelTurn, *, streamed: bool) -> ModelTurn:
    """A whole body holds ``input`` as an object: other arguments stay the model's markup."""
    if streamed or turn.arguments is None:
        return turn
    try:
        parsed = json.loads(turn.arguments)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        return turn
    markup = '<tool_call>\n{"name": "' + turn.tool + '", "arguments": ' + turn.arguments
    if turn.finish != "length":
        markup += "}\n</tool_call>"
    return ModelTurn(text=markup, finish="length" if turn.finish == "length" else "stop")


def _messages_start() -> dict[str, Any]:
    return {
        "type": "message_start",
        "message": {
            "id": "msg_weather",
            "type": "message",
            "role": "assistant",
            "model": "local-model",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 40, "output_tokens": 1},
        },
    }


def _sse(name: str, payload: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(payload)}\n\n".encode()


def _messages_stream(turn: ModelTurn, call_id: str) -> list[bytes]:
    events = [_sse("message_start", _messages_start())]
    if turn.error is not None:
        # llama-server's format_anthropic_sse: the error object itself is the event's data.
        return [*events, _sse("error", _error_object(turn.error))]
    index = 0
    blocks: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []
    if turn.text:
        pieces = [turn.text[i : i + 6] for i in range(0, len(turn.text), 6)]
        blocks.append(
            ({"type": "text", "text": ""}, [{"type": "text_delta", "text": p} for p in pieces])
        )
    if turn.arguments is not None:
        pieces = [turn.arguments[i : i + 5] for i in range(0, len(turn.arguments), 5)]
        start = {"type": "tool_use", "id": call_id, "name": turn.tool, "input": {}}
        blocks.append((start, [{"type": "input_json_delta", "partial_json": p} for p in pieces]))
    for start, deltas in blocks:
        events.append(
            _sse(
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": start},
            )
        )
        for delta in deltas:
            events.append(
                _sse(
                    "content_block_delta",
                    {"type": "content_block_delta", "index": index, "delta": delta},
                )
            )
        events.append(_sse("content_block_stop", {"type": "content_block_stop", "index": index}))
        index += 1
    delta = {"stop_reason": _STOP_REASON[turn.finish], "stop_sequence": None}
    events.append(
        _sse(
            "message_delta",
            {"type": "message_delta", "delta": delta, "usage": {"output_tokens": 20}},
        )
    )
    events.append(_sse("message_stop", {"type": "message_stop"}))
    return events


def _messages_whole(turn: ModelTurn, call_id: str) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if turn.text:
        content.append({"type": "text", "text": turn.text})
    if turn.arguments is not None:
        content.append(
            {
                "type": "tool_use",
                "id": call_id,
                "name": turn.tool,
                "input": json.loads(turn.arguments),
            }
        )
    message = _messages_start()["message"]
    return {
        **message,
        "content": content,
        "stop_reason": _STOP_REASON[turn.finish],
        "usage": {"input_tokens": 40, "output_tokens": 20},
    }


# -- OpenAI Responses ------------------------------------------------------------------------


def _responses_events(turn: ModelTurn, number: int) -> list[dict[str, Any]]:
    built = ReplyBuilder(f"resp_{number}")
    if turn.text:
        built.message(f"msg_{number}", turn.text)
    if turn.arguments is not None:
        status = "incomplete" if turn.finish == "length" else "completed"
        built.call(f"fc_{number}", f"call_{number}", turn.tool, turn.arguments, status=status)
    reply = built.cut_at_max_output_tokens(64) if turn.finish == "length" else built.completed()
    return reply.events


def _responses_stream(turn: ModelTurn, number: int) -> list[bytes]:
    if turn.error is not None:
        head = ReplyBuilder(f"resp_{number}").events
        framed = [_sse(e["type"], {**e, "sequence_number": n}) for n, e in enumerate(head)]
        return [
            *framed,
            b"data: " + json.dumps({"error": _error_object(turn.error)}).encode() + b"\n\n",
        ]
    events = _responses_events(turn, number)
    return [_sse(e["type"], {**e, "sequence_number": n}) for n, e in enumerate(events)]


# -- the server ------------------------------------------------------------------------------

_BY_PATH = {path: endpoint for endpoint, path in ENDPOINTS.items() if endpoint != "ollama"}


class _Handler(LoopbackHandler[FrameworkUpstream]):
    def handle(self) -> None:
        try:
            super().handle()
        except (ConnectionResetError, BrokenPipeError):  # the client went away: its business
            self.close_connection = True

    def do_GET(self) -> None:
        self.send_json(200, {"object": "list", "data": [{"id": "local-model", "object": "model"}]})

    def do_POST(self) -> None:
        request = self.read_json()
        script = self.script
        script.record(request)
        endpoint = _BY_PATH.get(self.path.split("?")[0])
        streamed = request.get("stream") is True
        model = str(request.get("model", ""))
        fault = model.removeprefix("weather-")
        if endpoint is None or fault not in FAULT_TURNS:
            script.note(str(endpoint), fault, streamed, "404")
            self.send_json(
                404, {"error": {"message": f"no route {self.path} for {model!r}", "code": 404}}
            )
            return
        try:
            view = chat_view(endpoint, request)
        except ValueError as refused:  # the server's conversion refused an item
            script.note(endpoint, fault, streamed, "400")
            self.send_json(
                400,
                {"error": {"code": 400, "message": str(refused), "type": "invalid_request_error"}},
            )
            return
        refusal = history_refusal(view)
        if refusal is not None:
            script.note(endpoint, fault, streamed, "history 500")
            self.send_json(500, {"error": _error_object(refusal)})
            return
        turn = next_turn(fault, view, tool_names(endpoint, request))
        number = script.next_id()
        call_id = f"call_{number}"
        script.note(endpoint, fault, streamed, _describe(turn))
        if endpoint == "messages":
            turn = _as_messages_turn(turn, streamed=streamed)
        if turn.error is not None and not streamed:
            self.send_json(500, {"error": _error_object(turn.error)})
            return
        if endpoint == "chat":
            if streamed:
                usage = bool((request.get("stream_options") or {}).get("include_usage"))
                self.send_stream(
                    _chat_stream(turn, call_id, usage), "text/event-stream", headers=NO_CACHE
                )
            else:
                self.send_json(200, _chat_whole(turn, call_id))
        elif endpoint == "messages":
            if streamed:
                self.send_stream(
                    _messages_stream(turn, call_id), "text/event-stream", headers=NO_CACHE
                )
            else:
                self.send_json(200, _messages_whole(turn, call_id))
        elif streamed:
            self.send_stream(_responses_stream(turn, number), "text/event-stream", headers=NO_CACHE)
        else:
            self.send_json(200, _responses_events(turn, number)[-1]["response"])


def _describe(turn: ModelTurn) -> str:
    if turn.error is not None:
        return "parser 500"
    if turn.arguments is not None:
        return f"{turn.tool}({turn.arguments}) {turn.finish}"
    return f"text {turn.text[:20]!r} {turn.finish}"


def running_framework_upstream() -> Loopback[FrameworkUpstream]:
    """Serve a :class:`FrameworkUpstream` at ``http://127.0.0.1:<port>`` (no ``/v1``)."""
    return Loopback(FrameworkUpstream(), _Handler)
