"""A call whose schema check is priced too high for the event loop, and a stand-in worker.

Shared by the tests of the judge's time budget at every layer (``Pipeline(judge_budget=...)``,
``HealingTransport(judge_budget=...)``, ``toolwire serve``'s ``judge_budget``): they check where
the budget goes and what a call past it becomes, never how long anything takes, so the worker
process is replaced by :class:`StandInWorker`, which says the check ran past its budget.
"""

from __future__ import annotations

import json
import random
from typing import Any

from toolwire.judge._worker import UncheckedWhy, WorkerRequest

#: At the repetition bound: on text of two letters the regex engine's lazy DFA gives up and its
#: slower search costs microseconds per character (``tests/stages/test_judge_process.py``).
SCHEMA = {"type": "object", "properties": {"s": {"type": "string", "pattern": "a\\w{256}c"}},
          "required": ["s"]}  # fmt: skip
TOOLS = [{"type": "function", "function": {"name": "grep", "parameters": SCHEMA}}]


def costly_arguments(size: int = 4_000, *, seed: int = 1) -> str:
    """Arguments for ``grep`` priced over the event loop's 5 ms (4,000 characters are)."""
    rng = random.Random(seed)
    return json.dumps({"s": "".join(rng.choice("ab") for _ in range(size))})


def completion(arguments: str) -> dict[str, Any]:
    """A whole Chat Completions answer calling ``grep`` with ``arguments``."""
    call = {"id": "c1", "type": "function", "function": {"name": "grep", "arguments": arguments}}
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    return {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 90, "total_tokens": 95}}  # fmt: skip


class StandInWorker:
    """Stands for ``toolwire.stages.judge.ask_worker``: records each budget it is given and
    answers ``why`` (the check ran past its budget), as the real one would past it."""

    def __init__(self, why: UncheckedWhy = "slow") -> None:
        self.budgets: list[float] = []
        self.why: UncheckedWhy = why

    async def __call__(self, request: WorkerRequest, budget: float) -> UncheckedWhy:
        del request
        self.budgets.append(budget)
        return self.why
