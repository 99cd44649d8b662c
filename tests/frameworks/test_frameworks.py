"""The framework matrix (issue 30): real agent stacks, each fault, direct and through toolwire.

Each stack runs in its own virtualenv (``matrix.VENVS``, made by ``.ci/run``), set up as its
docs say, against the scripted upstream (``upstream.py``) directly, through ``toolwire serve
--provider llama-server`` and, where the framework takes an httpx client, through
``HealingTransport``. Measured once for the module (about five minutes); then:

- no cell through toolwire runs the tool with arguments the model did not mean, nor twice;
- every cell through toolwire is a correct run (the tool ran once with ``{"city": "Paris"}``
  and the run ended with the answer), or is one the stack cannot play (a reason given), or is
  listed in ``matrix.EXPLAINED`` with the reason;
- the upstream really played each fault to each stack (so a correct run is the healing's
  doing), and directly, stacks do run bad calls (the matrix can see one);
- docs/frameworks.md shows what was measured.

Without the virtualenvs the module is skipped on a development machine and fails in CI
(``TOOLWIRE_REQUIRE_FRAMEWORKS=1``, set by ``.ci/run``). The upstream's own behaviour is
checked without them in ``test_upstream.py``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from .matrix import (
    EXPLAINED,
    STACKS,
    measure,
    outcome,
    render,
    rendered_in_doc,
    running_routes,
    toolwire_cells,
    venv_python,
)
from .upstream import FAULT_TURNS, _describe

pytestmark = pytest.mark.slow


def _require_venvs() -> None:
    missing = sorted(
        {str(venv_python(stack)) for stack in STACKS if not venv_python(stack).exists()}
    )
    if not missing:
        return
    reason = (
        f"the frameworks' virtualenvs are missing ({', '.join(missing)}): make them as .ci/run "
        "does, with tests/frameworks/requirements*.txt and .ci/constraints-frameworks*.txt"
    )
    if os.environ.get("TOOLWIRE_REQUIRE_FRAMEWORKS") == "1":
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def measured() -> Iterator[dict[str, Any]]:
    _require_venvs()
    with running_routes() as (routes, upstream):
        yield measure(STACKS, routes, upstream)


def _mode(result: dict[str, Any]) -> str:
    return "streamed" if result["streamed"] else "whole"


def test_no_bad_call_runs_through_toolwire(measured: dict[str, Any]) -> None:
    bad = [
        (stack.key, route, result["fault"], _mode(result), result["ran"])
        for stack, route, result in toolwire_cells(measured)
        if outcome(result) in ("BAD ARGS", "ran twice")
    ]
    assert bad == []


def test_every_cell_through_toolwire_is_a_correct_run_or_explained(
    measured: dict[str, Any],
) -> None:
    unexplained = []
    for stack, route, result in toolwire_cells(measured):
        came_to = outcome(result)
        if came_to == "ok" or (came_to == "n/a" and result["skipped"]):
            continue
        if (stack.key, result["fault"], _mode(result)) in EXPLAINED:
            continue
        unexplained.append(
            (stack.key, route, result["fault"], _mode(result), came_to, result["error"])
        )
    assert unexplained == []


def test_an_explained_cell_still_fails_as_explained(measured: dict[str, Any]) -> None:
    # An entry of EXPLAINED that became a correct run must leave the table (and the doc).
    healed = [
        (stack.key, result["fault"], _mode(result))
        for stack, _, result in toolwire_cells(measured)
        if (stack.key, result["fault"], _mode(result)) in EXPLAINED and outcome(result) == "ok"
    ]
    assert healed == []


def test_the_upstream_played_each_fault_to_each_stack(measured: dict[str, Any]) -> None:
    not_played = []
    for key, row in measured.items():
        for route, log in row["log"].items():
            for result in row[route]:
                if result["skipped"]:
                    continue
                fault, streamed = result["fault"], result["streamed"]
                answered = [entry[3] for entry in log if entry[1] == fault and entry[2] == streamed]
                if fault == "history_refusal":
                    # Refused, unless the framework itself rewrote the broken call (pydantic-ai,
                    # langchain-anthropic) or toolwire repaired it: then the clean call.
                    expected = {"history 500", _describe(FAULT_TURNS["clean"])}
                    played = bool(answered) and answered[0] in expected
                else:
                    played = bool(answered) and answered[0] == _describe(FAULT_TURNS[fault])
                if not played:
                    not_played.append((key, route, fault, streamed, answered[:1]))
    assert not_played == []


def test_direct_some_stacks_run_bad_calls(measured: dict[str, Any]) -> None:
    # What issue 30 saw, without toolwire: the matrix tells a bad call when one runs.
    bad = {
        (key, result["fault"])
        for key, row in measured.items()
        for result in row["direct"]
        if outcome(result) == "BAD ARGS"
    }
    assert {("smolagents", "length"), ("llama-index", "wrong_type")} <= bad
    assert ("langgraph-openai", "length") in bad
    assert ("google-adk", "wrong_type") in bad


def test_the_doc_shows_what_was_measured(measured: dict[str, Any]) -> None:
    assert rendered_in_doc() == render(measured), (
        "docs/frameworks.md is out of date: run .venv/bin/python bench/framework_matrix.py --write"
    )
