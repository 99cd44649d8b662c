"""``toolwire serve``'s ``judge_budget`` (``--judge-budget``): the judge's time budget for a call
too costly to check on the event loop (issue 29, H2), set per proxy.

It was ``JudgeStage(check_budget=2.0)`` alone, with no setting. The app runs in process
(``httpx.ASGITransport``) over a mock upstream; the worker process is a stand-in that says the
check ran past its budget (``tests/stages/costly_calls.py``): where the budget goes, not how
long anything takes.
"""

from __future__ import annotations

import argparse
from typing import Any

import httpx
import pytest
from stages.costly_calls import TOOLS, StandInWorker, completion, costly_arguments

from toolwire.cli.serve import add_serve_parser
from toolwire.core.errors import ConfigurationError
from toolwire.serve import ServeSettings, create_app
from toolwire.serve import settings as serve_settings
from toolwire.serve.settings import load_settings
from toolwire.stages import judge as judge_stage

pytestmark = pytest.mark.anyio

UPSTREAM = "http://upstream.test/v1"


class _Parsed(Exception):
    """Stops ``run_serve`` once it has the settings' values, before it binds anything."""


def _settings_of_flags(monkeypatch: pytest.MonkeyPatch, *flags: str) -> dict[str, Any]:
    """What ``toolwire serve FLAGS`` hands to ``load_settings`` (the real ``run_serve``)."""
    seen: dict[str, Any] = {}

    def load(config: object, **overrides: Any) -> ServeSettings:
        seen.update(overrides)
        raise _Parsed

    monkeypatch.setattr(serve_settings, "load_settings", load)
    parser = argparse.ArgumentParser()
    add_serve_parser(parser.add_subparsers())
    args = parser.parse_args(["serve", "--upstream", UPSTREAM, *flags])
    with pytest.raises(_Parsed):
        args.handler(args)
    return seen


def test_the_flag_sets_the_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _settings_of_flags(monkeypatch, "--judge-budget", "0.5")["judge_budget"] == 0.5
    # No flag: the file's value or the default (None overrides nothing).
    assert _settings_of_flags(monkeypatch)["judge_budget"] is None


def test_the_default_and_a_file_value(tmp_path: Any) -> None:
    assert load_settings(None, upstream=UPSTREAM).judge_budget == 2.0
    config = tmp_path / "serve.toml"
    config.write_text(f'upstream = "{UPSTREAM}"\njudge_budget = 0.75\n', encoding="utf-8")
    assert load_settings(config).judge_budget == 0.75
    assert load_settings(config, judge_budget=3).judge_budget == 3.0  # the flag wins


@pytest.mark.parametrize("budget", [0, -1, float("inf"), float("nan"), "soon"])
def test_a_bad_budget_is_a_configuration_error_naming_it(budget: Any) -> None:
    """No "no budget" on a shared proxy: such a check would hold every client's loop."""
    with pytest.raises(ConfigurationError, match="judge_budget"):
        load_settings(None, upstream=UPSTREAM, judge_budget=budget)


async def test_the_proxy_judges_with_its_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    worker = StandInWorker()
    monkeypatch.setattr(judge_stage, "ask_worker", worker)

    def upstream(request: httpx.Request) -> httpx.Response:
        del request
        return httpx.Response(200, json=completion(costly_arguments()))

    app = create_app(
        ServeSettings(upstream=UPSTREAM, max_retries=0, judge_budget=0.25),
        upstream_transport=httpx.MockTransport(upstream),
    )
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://proxy.test"
        ) as client:
            response = await client.post(
                "/v1/chat/completions",
                json={"model": "m", "messages": [{"role": "user", "content": "grep"}],
                      "tools": TOOLS},
            )  # fmt: skip
    finally:
        await app.aclose()
    assert worker.budgets == [0.25]
    assert response.status_code == 502
    error = response.json()["error"]
    assert error["type"] == "toolwire_heal_failed"
    assert "within toolwire's 0.25 s budget" in error["message"]
