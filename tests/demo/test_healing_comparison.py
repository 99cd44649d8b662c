"""``toolwire demo --healing`` against the real server: a plain agent through ``toolwire serve``.

One task at the smallest and the largest budget, healing off then on, on the real
llama-cpp-python server with SmolLM2 (the session's server). Whatever the model does, the
figures must be true to the runs: with healing on, no broken call ever reaches the agent, and
every count in the report is recounted from the runs it came from.
"""

from __future__ import annotations

import pytest
from optional_parts import optional_module

from toolwire.cli import main
from toolwire.cli.demo.model_file import MODEL_NAME
from toolwire.cli.demo.server import LocalServer
from toolwire.cli.demo.tasks import TASKS
from toolwire.cli.demo.through_proxy import compare_healing

pytestmark = [pytest.mark.anyio, pytest.mark.slow]  # slow: docs/development.md


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # uvicorn serves the proxy: asyncio only


async def test_with_healing_on_no_broken_call_reaches_the_agent(local_server: LocalServer) -> None:
    # The report is drawn with rich (the [demo] extra): imported here, so that the quick tier
    # collects this module without it; the full suite fails without it.
    optional_module("rich")
    from toolwire.cli.demo.healing_report import comparison_report

    comparison = await compare_healing(
        TASKS[:1], (16, 256), upstream=local_server.base_url, provider="llama-cpp",
        model=MODEL_NAME,
    )  # fmt: skip
    off, on = comparison.off, comparison.on
    assert on.broken_turns == 0
    assert all(run.broken_calls == 0 for run in on.runs)
    for mode in (off, on):
        assert mode.turns == sum(run.turns for run in mode.runs) > 0
        assert mode.tasks == 2
        assert mode.tasks_completed == sum(run.steps_done == run.steps for run in mode.runs)
        # Every turn of the agent is at least one request to the model; healing adds retries.
        assert mode.upstream.requests >= mode.turns
        assert mode.upstream.generated_tokens > 0
        assert not mode.upstream.usage_reported  # llama-cpp-python: no usage in streams
    assert off.upstream.requests == off.turns  # nothing in between asks again
    report = comparison_report(comparison)
    assert report["added"]["upstream_requests"] == on.upstream.requests - off.upstream.requests
    assert report["on"]["broken_turn_share"] == 0.0


@pytest.mark.parametrize("extra", [["--replay"], ["--record", "x.jsonl"], ["--plot", "x.png"]])
def test_healing_takes_no_replay_record_or_plot(
    extra: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["demo", "--healing", *extra]) == 2
    assert "--healing runs a live server" in capsys.readouterr().err
