"""What the tools users have do with calls left in the text: the text-call corpus through the
openai SDK, pydantic-ai and toolwire, side by side (issue 17, Evidence).

Each corpus case (``tests/stages/text_calls/corpus/``) becomes the body a Chat Completions
server sends when its tool parser missed the call: the text as ``content`` (streamed in
4-character deltas, or whole), ``finish_reason`` ``stop`` (``length`` for a cut call), no
``tool_calls``. Then:

- **openai SDK, streamed**: ``ChatCompletionStreamState`` (what ``client.chat.completions.stream``
  accumulates), ``message.tool_calls`` of its final completion;
- **openai SDK, whole**: ``ChatCompletion`` parsed from the body, ``message.tool_calls``;
- **pydantic-ai**: ``OpenAIChatModel._process_response`` (its Chat model's response parsing),
  the ``ToolCallPart`` s of the ``ModelResponse``;
- **toolwire**: ``Pipeline("vllm", tools=...)`` (text calls on), the calls that would run;
- **LiteLLM's proxy** (``--litellm``: LiteLLM from ``.venv-litellm``, ``bench_litellm.py``), the
  case served by a fake upstream behind ``openai/<model>``, read by the openai SDK from the
  proxy, streamed (``ChatCompletionStreamState``) and whole; bare, and with toolwire's
  guardrail (``provider: vllm``: text calls on, as for the local servers).

Counted: calls recovered (cases whose expected calls came out, names and arguments), false
positives (negatives and out-of-scope cases with any call), cut calls run (cut or malformed
cases with a call that would run). Run: ``python bench/bench_text_call_clients.py [--litellm]``.
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import anyio
import openai

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from openai.lib.streaming.chat import ChatCompletionStreamState
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from pydantic_ai.messages import ToolCallPart
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from stages.text_calls._harness import corpus_cases, tools_for

import toolwire

Call = tuple[str, Any]


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def chunks(text: str, finish: str) -> list[dict[str, Any]]:
    """The chunks of a server that left ``text`` unparsed, in 4-character deltas."""
    out = [_chunk({"role": "assistant", "content": ""})]
    out += [_chunk({"content": text[at : at + 4]}) for at in range(0, len(text), 4)]
    out.append(_chunk({}, finish))
    return out


def completion(text: str, finish: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": finish,
            }
        ],
    }


def _args(raw: str | dict[str, Any] | None) -> Any:
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return raw


def sdk_streamed(text: str, finish: str, tools: list[dict[str, Any]]) -> list[Call]:
    state: ChatCompletionStreamState[Any] = ChatCompletionStreamState(input_tools=tools)  # type: ignore[arg-type]
    for chunk in chunks(text, finish):
        state.handle_chunk(ChatCompletionChunk.model_validate(chunk))
    message = state.get_final_completion().choices[0].message
    return [(c.function.name, _args(c.function.arguments)) for c in message.tool_calls or ()]


def sdk_whole(text: str, finish: str, tools: list[dict[str, Any]]) -> list[Call]:
    message = ChatCompletion.model_validate(completion(text, finish)).choices[0].message
    return [
        (c.function.name, _args(c.function.arguments))  # type: ignore[union-attr]
        for c in message.tool_calls or ()
    ]


_MODEL = OpenAIChatModel("m", provider=OpenAIProvider(api_key="sk-bench"))


def pydantic_ai(text: str, finish: str, tools: list[dict[str, Any]]) -> list[Call]:
    response = _MODEL._process_response(ChatCompletion.model_validate(completion(text, finish)))
    return [
        (part.tool_name, _args(part.args))
        for part in response.parts
        if isinstance(part, ToolCallPart)
    ]


def toolwire_calls(text: str, finish: str, tools: list[dict[str, Any]]) -> list[Call]:
    body = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks(text, finish))
    turn = anyio.run(toolwire.Pipeline("vllm", tools=tools).collect, body + b"data: [DONE]\n\n")
    return [(call.name, call.arguments) for call in turn.runnable]


Reader = Callable[[str, str, list[dict[str, Any]]], list[Call]]


def litellm_readers(stack: ExitStack) -> dict[str, Reader]:
    """Readers through a real LiteLLM proxy, bare and with toolwire's guardrail (``vllm``)."""
    from bench_litellm import start_litellm, stop
    from heal.upstream import Reply, running_upstream

    upstream = stack.enter_context(running_upstream())
    folder = Path(stack.enter_context(tempfile.TemporaryDirectory()))
    bare, bare_url = start_litellm(upstream.base_url, guardrail=False, folder=folder, models=("m",))
    guarded, guarded_url = start_litellm(
        upstream.base_url,
        guardrail=True,
        folder=folder,
        models=("m",),
        options="      provider: vllm\n",
    )
    stack.callback(stop, [bare, guarded])

    def through(base: str, stream: bool) -> Reader:
        client = openai.OpenAI(base_url=base, api_key="sk-bench", max_retries=0, timeout=30)
        stack.callback(client.close)

        def read(text: str, finish: str, tools: list[dict[str, Any]]) -> list[Call]:
            upstream.replies.clear()  # one reply per case: a retry finds none (HTTP 500)
            messages = [{"role": "user", "content": "go"}]
            if stream:
                body = b"".join(
                    b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks(text, finish)
                )
                upstream.script(Reply(body + b"data: [DONE]\n\n"))
                state: ChatCompletionStreamState[Any] = ChatCompletionStreamState(
                    input_tools=tools  # type: ignore[arg-type]
                )
                for chunk in client.chat.completions.create(
                    model="m",
                    messages=messages,  # type: ignore[arg-type]
                    tools=tools,  # type: ignore[arg-type]
                    stream=True,
                ):
                    state.handle_chunk(chunk)
                message = state.get_final_completion().choices[0].message
                return [
                    (c.function.name, _args(c.function.arguments)) for c in message.tool_calls or ()
                ]
            upstream.script(Reply(json.dumps(completion(text, finish)).encode()))
            reply = client.chat.completions.create(model="m", messages=messages, tools=tools)  # type: ignore[arg-type]
            return [
                (c.function.name, _args(c.function.arguments))  # type: ignore[union-attr]
                for c in reply.choices[0].message.tool_calls or ()
            ]

        return read

    return {
        "LiteLLM proxy 1.108.7, streamed (openai SDK)": through(bare_url, True),
        "LiteLLM proxy 1.108.7, whole (openai SDK)": through(bare_url, False),
        "LiteLLM + toolwire guardrail (provider: vllm), streamed": through(guarded_url, True),
        "LiteLLM + toolwire guardrail (provider: vllm), whole": through(guarded_url, False),
    }


READERS: dict[str, Reader] = {
    "openai SDK, streamed (ChatCompletionStreamState)": sdk_streamed,
    "openai SDK, whole (ChatCompletion)": sdk_whole,
    "pydantic-ai (OpenAIChatModel._process_response)": pydantic_ai,
    "toolwire (Pipeline, text_calls auto)": toolwire_calls,
}


def main() -> None:
    with ExitStack() as stack:
        readers = dict(READERS)
        if "--litellm" in sys.argv[1:]:
            readers.update(litellm_readers(stack))
        table(readers)


def table(readers: dict[str, Reader]) -> None:
    kinds = ("text_call", "negative", "cut_call", "out_of_scope")  # as tests/.../test_corpus.py
    cases = [case for case in corpus_cases() if case["kind"] in kinds]
    expected = [c for c in cases if isinstance(c["expected"], list)]
    negatives = [c for c in cases if c["kind"] in ("negative", "out_of_scope")]
    cuts = [c for c in cases if c["kind"] == "cut_call"]
    print(
        f"| reader | calls recovered (of {len(expected)}) | false positives (of "
        f"{len(negatives)}) | cut calls run (of {len(cuts)}) |"
    )
    print("|---|---|---|---|")
    for label, read in readers.items():
        recovered = false = ran = 0
        crashed: dict[str, int] = {}
        for case in cases:
            finish = "length" if case["kind"] == "cut_call" else "stop"
            try:
                calls = read(case["text"], finish, tools_for(case))
            except Exception as error:  # no call; reported by the exception's name
                crashed[type(error).__name__] = crashed.get(type(error).__name__, 0) + 1
                calls = []
            if case in expected:
                want = [(call["name"], call["arguments"]) for call in case["expected"]]
                recovered += calls == want
            elif case in negatives:
                false += bool(calls)
            elif case in cuts:
                ran += bool(calls)
        crashes = "".join(f" ({n} raised {name})" for name, n in sorted(crashed.items()))
        print(f"| {label}{crashes} | {recovered} | {false} | {ran} |")


if __name__ == "__main__":
    main()
