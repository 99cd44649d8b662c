"""A complete, minimal agent loop: the ``openai`` SDK streams, toolwire judges, runs and replays.

Runnable against any OpenAI-compatible server (OpenAI, llama-server, vLLM, Ollama's ``/v1``,
LM Studio...)::

    python docs/agent_loop.py --base-url http://127.0.0.1:8080/v1 --model X

Each step: stream one assistant turn, let toolwire judge every call (``collect``), run the calls
that passed (``dispatch``: a rejected call never reaches ``run_tool``), append the assistant turn
and exactly one result per call to the history (``next_messages``: the judge's message for a
rejected call, arguments every backend accepts), check the history, and decide whether the run
is over (``run_stop_reason``). ``docs/agent-loop.md`` explains each choice.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
import openai

import toolwire

#: Two harmless tools, in the OpenAI ``tools`` format; toolwire validates calls against them.
TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "add",
            "description": "Add two numbers.",
            "parameters": {
                "type": "object",
                "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                "required": ["a", "b"],
                "additionalProperties": False,
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "word_count",
            "description": "Count the words of a text.",
            "parameters": {
                "type": "object",
                "properties": {"text": {"type": "string"}},
                "required": ["text"],
                "additionalProperties": False,
            },
        },
    },
]

RunTool = Callable[[Any], Awaitable[Any]]


async def run_example_tool(call: Any) -> Any:
    """Run one judged call of :data:`TOOLS`: ``call.arguments`` is a dict that passed the schema."""
    arguments = call.arguments
    if call.name == "add":
        total = arguments["a"] + arguments["b"]
        if not math.isfinite(total):
            raise ValueError("the sum is not a finite number")
        return total
    if call.name == "word_count":
        return len(arguments["text"].split())
    raise LookupError(f"no tool named {call.name!r}")  # unreachable: the judge rejects it first


@dataclass
class AgentResult:
    """How a run ended, the whole history, and every turn as toolwire understood it."""

    stop: toolwire.RunStop
    messages: list[dict[str, Any]]
    turns: list[toolwire.Turn] = field(default_factory=list)

    @property
    def final_text(self) -> str:
        """The text of the last turn (the answer when ``stop.reason == "done"``)."""
        return self.turns[-1].text if self.turns else ""


async def run_agent(
    client: openai.AsyncOpenAI,
    model: str,
    messages: Sequence[dict[str, Any]],
    tools: list[dict[str, Any]],
    run_tool: RunTool,
    max_steps: int = 8,
    *,
    max_tokens: int = 1024,
    stop_on: Iterable[str] = ("repair_loop",),
    repair_limit: int = 3,
    # The run itself must report ``timeout`` with a well-formed history, which a cancel scope
    # around the call cannot do: so the deadline is a parameter here.
    timeout: float | None = None,  # noqa: ASYNC109
) -> AgentResult:
    """Run the model and its tools until it answers, gets stuck, or runs out of steps or time.

    ``stop_on`` defaults to ``repair_loop`` only: a cut-off or malformed call is answered with
    the judge's message and the model gets to try again, but the same tool rejected
    ``repair_limit`` times in a row ends the run. Add ``length`` or ``malformed_tool_call`` to
    end the run at the first such turn instead (what training rollouts want).
    """
    history = list(messages)
    turns: list[toolwire.Turn] = []
    # One pipeline for the whole run: checked once, reused every turn. Its loop guard counts
    # rejections across the turns of this run only.
    pipeline = toolwire.Pipeline(
        "openai-compatible",
        max_tokens=max_tokens,
        tools=tools,
        stop_on=set(stop_on),
        loop_guard=toolwire.RepairLoopGuard(limit=repair_limit),
    )
    with anyio.move_on_after(math.inf if timeout is None else timeout) as deadline:
        for step in range(1, max_steps + 1):
            stream = await client.chat.completions.create(
                model=model, messages=history, tools=tools, max_tokens=max_tokens, stream=True
            )
            # The SDK stream goes straight in; collect closes it, whatever happens.
            turn = await pipeline.collect(stream)
            turns.append(turn)
            results: list[toolwire.ToolResult] = []
            try:
                async for result in toolwire.dispatch(turn, run_tool):
                    results.append(result)
            finally:
                # Even when the deadline cancels the tools, every call id gets one result
                # ("not run"), so the history stays valid for the next run.
                history += pipeline.next_messages(turn, toolwire.answer_every_call(turn, results))
            pipeline.ensure_well_formed(history)
            stop = toolwire.run_stop_reason(
                stopped_by=turn.stopped_by,
                stop_reason=turn.stop_reason,
                has_calls=bool(turn.calls),
                step=step,
                max_steps=max_steps,
            )
            if stop is not None:
                return AgentResult(stop, history, turns)
    if deadline.cancelled_caught:
        return AgentResult(toolwire.RunStop("timeout", f"{timeout} s"), history, turns)
    return AgentResult(toolwire.RunStop("max_steps"), history, turns)  # max_steps < 1


async def main(argv: list[str] | None = None) -> int:
    """Command line: ask one question, print each turn's calls and the answer."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", required=True, help="e.g. http://127.0.0.1:8080/v1")
    parser.add_argument("--model", required=True)
    parser.add_argument("--api-key", default="not-needed-locally")
    parser.add_argument(
        "--prompt", default="What is 1234 + 5678? Then count the words in 'to be or not to be'."
    )
    parser.add_argument("--max-steps", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=1024)
    parser.add_argument("--timeout", type=float, default=None)
    options = parser.parse_args(argv)

    messages = [{"role": "user", "content": options.prompt}]
    async with openai.AsyncOpenAI(base_url=options.base_url, api_key=options.api_key) as client:
        result = await run_agent(
            client,
            options.model,
            messages,
            TOOLS,
            run_example_tool,
            options.max_steps,
            max_tokens=options.max_tokens,
            timeout=options.timeout,
        )
    for number, turn in enumerate(result.turns, 1):
        for call in turn.calls:
            print(f"step {number}: {call.name} {call.outcome}", json.dumps(call.arguments))
    print(f"stopped: {result.stop.reason} {result.stop.detail}".rstrip())
    print(result.final_text)
    return 0 if result.stop.reason == "done" else 1


if __name__ == "__main__":
    raise SystemExit(anyio.run(main))
