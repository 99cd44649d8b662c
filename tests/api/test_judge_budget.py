"""``Pipeline(judge_budget=...)``: the judge's time budget for a call too costly to check on the
event loop (issue 29, H2), as an option of the pipeline and of ``collect`` / ``stream``.

It was ``JudgeStage(check_budget=2.0)`` alone: a pipeline, and so the healing transport and the
proxy, always checked with 2 s. The budget must reach every judge stage a pipeline builds (its
tools option's, each request's tools' from the cache, a ``replace``'s) and be checked where it
is set.
"""

from __future__ import annotations

from typing import Any

import pytest
from _toolwire_testdata import chat_chunk, sse_body
from stages.costly_calls import TOOLS, StandInWorker, costly_arguments

import toolwire
from toolwire import ConfigurationError, Pipeline
from toolwire.stages import judge as judge_stage

pytestmark = pytest.mark.anyio


def _call_stream(arguments: str) -> bytes:
    call = {"index": 0, "id": "c1", "type": "function",
            "function": {"name": "grep", "arguments": arguments}}  # fmt: skip
    return sse_body(
        [
            chat_chunk({"role": "assistant", "tool_calls": [call]}),
            chat_chunk({}, finish_reason="tool_calls"),
        ]
    )


@pytest.fixture
def worker(monkeypatch: pytest.MonkeyPatch) -> StandInWorker:
    stand_in = StandInWorker()
    monkeypatch.setattr(judge_stage, "ask_worker", stand_in)
    return stand_in


@pytest.mark.parametrize("budget", [0, -1, float("inf"), float("nan"), "2", True])
@pytest.mark.parametrize("judge", [True, False])
def test_a_bad_budget_fails_where_it_is_set(budget: Any, judge: bool) -> None:
    """Checked at construction, even when nothing is judged (a typo never waits for a turn)."""
    with pytest.raises(ConfigurationError, match="judge_budget must be a number of seconds"):
        Pipeline(judge_budget=budget, judge=judge)
    with pytest.raises(ConfigurationError, match="judge_budget"):
        Pipeline().replace(judge_budget=budget)


@pytest.mark.parametrize(
    ("options", "request_body"),
    [
        pytest.param({"tools": TOOLS}, None, id="tools option"),
        pytest.param({}, {"model": "m", "messages": [], "tools": TOOLS}, id="request's tools"),
    ],
)
async def test_a_call_past_the_budget_is_unchecked_naming_the_pipelines_budget(
    worker: StandInWorker, options: dict[str, Any], request_body: dict[str, Any] | None
) -> None:
    pipeline = Pipeline(judge_budget=0.25, **options)
    turn = await pipeline.collect(_call_stream(costly_arguments()), request=request_body)
    assert worker.budgets == [0.25]
    (call,) = turn.calls
    assert (call.verdict.outcome, call.verdict.reason) == ("rejected", "unchecked")
    assert call.verdict.detail == "the check did not finish within toolwire's 0.25 s budget"
    assert "Nothing was found wrong with them." in call.verdict.message


async def test_the_default_budget_is_two_seconds_and_a_copy_keeps_its_own(
    worker: StandInWorker,
) -> None:
    source = costly_arguments()
    await Pipeline(tools=TOOLS).collect(_call_stream(source))
    await Pipeline(tools=TOOLS, judge_budget=1).replace(max_tokens=64).collect(_call_stream(source))
    await toolwire.collect(_call_stream(source), tools=TOOLS, judge_budget=3.5)
    assert worker.budgets == [2.0, 1.0, 3.5]


async def test_no_budget_checks_the_costly_call_here_in_full(worker: StandInWorker) -> None:
    """``None``: no worker process; the call is checked in a thread and judged on its merits
    (its text never matches the pattern: a schema rejection, not ``unchecked``)."""
    turn = await Pipeline(tools=TOOLS, judge_budget=None).collect(_call_stream(costly_arguments()))
    assert worker.budgets == []
    (call,) = turn.calls
    assert (call.verdict.outcome, call.verdict.reason) == ("rejected", "schema")


async def test_a_cheap_call_never_asks_a_worker(worker: StandInWorker) -> None:
    turn = await Pipeline(tools=TOOLS, judge_budget=0.01).collect(
        _call_stream(costly_arguments(40))
    )
    assert worker.budgets == []
    assert turn.calls[0].verdict.reason == "schema"
