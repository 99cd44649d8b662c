"""Benchmark: one big ``write`` call in every provider's wire format, each against its own floor.

Run: ``.venv/bin/python bench/bench_providers.py [--runs N] [--kb K]``

For each provider, the same call (``{"path": ..., "content": ...}`` of about ``K`` KB) is written
in that provider's real shape: the streaming formats (Chat Completions, Responses, Anthropic)
send the arguments in pieces of 4 characters, one event per piece, as real servers do; Gemini and
Ollama send a call whole, so their bodies carry the same text as many text pieces followed by the
call. The body is handed over as 64 KB reads.

- floor: join the reads, split the events (SSE: on blank lines; NDJSON: on lines), decode every
  payload with msgspec into a typed Struct holding only what the floor reads, join the argument
  pieces (or take the whole call), decode the arguments once; where the body carries text (the
  Gemini and Ollama bodies), join the text too, since the turn holds it. No framing rules, no error
  handling, no events: what any reader must do.
- toolwire: ``await toolwire.collect(<64 KB reads>, provider, judge=False)`` then
  ``msgspec.json.decode`` of the call's text (the judge would parse it itself).

The ratio toolwire/floor is the figure (target: at most 1.5 for every provider).
"""

from __future__ import annotations

import argparse
import gc
import json
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import msgspec

import toolwire

_decode = msgspec.json.decode


def arguments_text(kb: int) -> str:
    content = ("print('hello world')\n" * (kb * 1000 // 21 + 1))[: kb * 1000]
    return json.dumps({"path": "hello.py", "content": content})


def pieces_of(text: str, size: int = 4) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def _sse(events: list[tuple[str | None, Any]]) -> bytes:
    out = []
    for name, payload in events:
        head = f"event: {name}\n" if name else ""
        out.append(f"{head}data: {json.dumps(payload)}\n\n")
    return "".join(out).encode()


def chat(text: str) -> bytes:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    events: list[tuple[str | None, Any]] = [
        (None, chunk({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                                      "function": {"name": "write", "arguments": ""}}]}))
    ]
    events += [(None, chunk({"tool_calls": [{"index": 0, "function": {"arguments": p}}]}))
               for p in pieces_of(text)]
    events.append((None, chunk({}, "tool_calls")))
    return _sse(events) + b"data: [DONE]\n\n"


def responses(text: str) -> bytes:
    call = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "write",
            "arguments": "", "status": "in_progress"}
    events: list[tuple[str | None, Any]] = [
        ("response.created", {"type": "response.created",
                              "response": {"id": "r", "model": "m", "status": "in_progress",
                                           "output": []}}),
        ("response.output_item.added", {"type": "response.output_item.added", "output_index": 0,
                                        "item": call}),
    ]
    events += [("response.function_call_arguments.delta",
                {"type": "response.function_call_arguments.delta", "item_id": "fc_1",
                 "output_index": 0, "delta": p}) for p in pieces_of(text)]
    done = {**call, "arguments": text, "status": "completed"}
    events += [
        ("response.function_call_arguments.done",
         {"type": "response.function_call_arguments.done", "item_id": "fc_1",
          "output_index": 0, "arguments": text}),
        ("response.output_item.done", {"type": "response.output_item.done", "output_index": 0,
                                       "item": done}),
        ("response.completed", {"type": "response.completed",
                                "response": {"id": "r", "model": "m", "status": "completed",
                                             "output": [done]}}),
    ]
    return _sse(events)


def anthropic(text: str) -> bytes:
    events: list[tuple[str | None, Any]] = [
        ("message_start", {"type": "message_start", "message": {
            "id": "msg", "type": "message", "role": "assistant", "model": "m", "content": [],
            "usage": {"input_tokens": 1, "output_tokens": 1}}}),
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {
            "type": "tool_use", "id": "call_1", "name": "write", "input": {}}}),
    ]
    events += [("content_block_delta", {"type": "content_block_delta", "index": 0,
                                        "delta": {"type": "input_json_delta", "partial_json": p}})
               for p in pieces_of(text)]
    events += [
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use"},
                           "usage": {"output_tokens": 9}}),
        ("message_stop", {"type": "message_stop"}),
    ]
    return _sse(events)


def gemini(text: str) -> bytes:
    # Calls come whole: as many text pieces as the others have argument pieces, then the call.
    texts = [(None, {"candidates": [{"content": {"parts": [{"text": p}], "role": "model"},
                                     "index": 0}]}) for p in pieces_of(text)]
    call = {"candidates": [{"content": {"parts": [{"functionCall": {
        "name": "write", "args": json.loads(text)}}], "role": "model"},
        "finishReason": "STOP", "index": 0}]}
    return _sse([*texts, (None, call)]).replace(b"\n\n", b"\r\n\r\n")


def ollama(text: str) -> bytes:
    stamp = {"model": "m", "created_at": "2025-01-01T00:00:00Z"}
    lines = [{**stamp, "message": {"role": "assistant", "content": p}, "done": False}
             for p in pieces_of(text)]
    lines.append({**stamp, "message": {"role": "assistant", "content": "", "tool_calls": [
        {"function": {"name": "write", "arguments": json.loads(text)}}]}, "done": False})
    lines.append({**stamp, "message": {"role": "assistant", "content": ""}, "done": True,
                  "done_reason": "stop"})
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


# -- floors: what any reader must do, decoding each payload into a typed Struct -------------------


class _Function(msgspec.Struct):
    arguments: str | None = None


class _ToolCall(msgspec.Struct):
    function: _Function | None = None


class _Delta(msgspec.Struct):
    tool_calls: list[_ToolCall] | None = None


class _Choice(msgspec.Struct):
    delta: _Delta | None = None


class _ChatChunk(msgspec.Struct):
    choices: list[_Choice] = []


class _ResponsesEvent(msgspec.Struct):
    type: str
    delta: str | None = None


class _AnthropicDelta(msgspec.Struct):
    partial_json: str | None = None


class _AnthropicEvent(msgspec.Struct):
    type: str
    delta: _AnthropicDelta | None = None


class _Call(msgspec.Struct):
    name: str = ""
    args: Any = None
    arguments: Any = None


class _Part(msgspec.Struct):
    text: str | None = None
    functionCall: _Call | None = None


class _Content(msgspec.Struct):
    parts: list[_Part] = []


class _Candidate(msgspec.Struct):
    content: _Content | None = None


class _GeminiChunk(msgspec.Struct):
    candidates: list[_Candidate] = []


class _OllamaToolCall(msgspec.Struct):
    function: _Call


class _OllamaMessage(msgspec.Struct):
    content: str = ""
    tool_calls: list[_OllamaToolCall] | None = None


class _OllamaLine(msgspec.Struct):
    message: _OllamaMessage | None = None


def _payloads(body: bytes) -> list[bytes]:
    out = []
    for event in body.replace(b"\r\n", b"\n").split(b"\n\n"):
        position = event.find(b"data: ")
        if position >= 0 and event[position + 6 :] != b"[DONE]":
            out.append(event[position + 6 :])
    return out


_chat = msgspec.json.Decoder(_ChatChunk).decode
_responses = msgspec.json.Decoder(_ResponsesEvent).decode
_anthropic = msgspec.json.Decoder(_AnthropicEvent).decode
_gemini = msgspec.json.Decoder(_GeminiChunk).decode
_ollama = msgspec.json.Decoder(_OllamaLine).decode


def floor_chat(body: bytes) -> Any:
    pieces = []
    for payload in _payloads(body):
        for choice in _chat(payload).choices:
            delta = choice.delta
            for call in (delta.tool_calls or ()) if delta else ():
                if call.function and call.function.arguments:
                    pieces.append(call.function.arguments)
    return _decode("".join(pieces))


def floor_responses(body: bytes) -> Any:
    pieces = []
    for payload in _payloads(body):
        event = _responses(payload)
        if event.type == "response.function_call_arguments.delta" and event.delta:
            pieces.append(event.delta)
    return _decode("".join(pieces))


def floor_anthropic(body: bytes) -> Any:
    pieces = []
    for payload in _payloads(body):
        event = _anthropic(payload)
        if event.delta is not None and event.delta.partial_json:
            pieces.append(event.delta.partial_json)
    return _decode("".join(pieces))


def floor_gemini(body: bytes) -> Any:
    found = None
    texts = []
    for payload in _payloads(body):
        for candidate in _gemini(payload).candidates:
            for part in candidate.content.parts if candidate.content else ():
                if part.functionCall is not None:
                    found = part.functionCall.args
                elif part.text:
                    texts.append(part.text)
    "".join(texts)  # the turn's text, which any reader of these bodies must build too
    return found


def floor_ollama(body: bytes) -> Any:
    found = None
    texts = []
    for line in body.splitlines():
        message = _ollama(line).message
        if message is None:
            continue
        if message.content:
            texts.append(message.content)
        for call in message.tool_calls or ():
            found = call.function.arguments
    "".join(texts)  # the turn's text, which any reader of these bodies must build too
    return found


PROVIDERS: dict[str, tuple[Callable[[str], bytes], Callable[[bytes], Any]]] = {
    "openai-chat": (chat, floor_chat),
    "openai-responses": (responses, floor_responses),
    "anthropic": (anthropic, floor_anthropic),
    "gemini": (gemini, floor_gemini),
    "ollama": (ollama, floor_ollama),
}


async def _reads(reads: list[bytes]) -> AsyncIterator[bytes]:
    for read in reads:
        yield read


async def toolwire_run(reads: list[bytes], provider: str) -> Any:
    turn = await toolwire.collect(_reads(reads), provider, judge=False)
    return _decode(turn.calls[0].arguments_raw)


async def main(runs: int, kb: int) -> None:
    text = arguments_text(kb)
    expected = json.loads(text)
    print(f"one write call, {len(text):,} characters of arguments; min of {runs} runs\n")
    print(f"{'provider':<18}{'body KB':>9}{'floor ms':>10}{'toolwire ms':>13}{'ratio':>8}")
    for name, (build, floor) in PROVIDERS.items():
        body = build(text)
        reads = [body[i : i + 65536] for i in range(0, len(body), 65536)]
        assert floor(b"".join(reads)) == expected, name
        assert await toolwire_run(reads, name) == expected, name
        best_floor = best_tool = float("inf")
        for _ in range(runs):  # interleaved, so that both see the same machine
            gc.collect()
            start = time.perf_counter()
            floor(b"".join(reads))
            best_floor = min(best_floor, time.perf_counter() - start)
            gc.collect()
            start = time.perf_counter()
            await toolwire_run(reads, name)
            best_tool = min(best_tool, time.perf_counter() - start)
        print(f"{name:<18}{len(body) / 1000:>9.0f}{best_floor * 1e3:>10.2f}"
              f"{best_tool * 1e3:>13.2f}{best_tool / best_floor:>8.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--kb", type=int, default=20)
    options = parser.parse_args()
    anyio.run(main, options.runs, options.kb)
