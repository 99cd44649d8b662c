"""Every behaviour vector of tests/data/vectors/tool_args.jsonl gives its expected outcome."""

from __future__ import annotations

import json
from typing import Any

import pytest
from data_paths import VECTORS

from toolwire.judge import parse_arguments

ROWS = [
    json.loads(line)
    for line in (VECTORS / "tool_args.jsonl").read_text(encoding="utf-8").splitlines()
    if line
]
OUTCOME = {"ok": "ok", "repair": "repaired", "reject": "rejected"}


def strict_equal(a: Any, b: Any) -> bool:
    """Equality that tells ``True`` from ``1`` and ``1.0`` from ``1``."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(strict_equal(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(strict_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def test_vectors_are_present() -> None:
    assert len(ROWS) >= 60


@pytest.mark.parametrize("row", ROWS, ids=[row["id"] for row in ROWS])
def test_vector(row: dict[str, Any]) -> None:
    verdict = parse_arguments(row["raw"], tool=row["tool"])
    if row["debatable"] and verdict.outcome != OUTCOME[row["expect"]]:
        assert verdict.outcome in {"ok", "repaired", "rejected"}
        return
    assert verdict.outcome == OUTCOME[row["expect"]], verdict
    if verdict.outcome == "rejected":
        assert verdict.reason == row["reject_category"], verdict
        assert verdict.arguments is None
        assert verdict.message is not None
        assert f"`{row['tool']}`" in verdict.message
    else:
        assert strict_equal(verdict.arguments, row["expected_args"]), verdict
        assert sorted(verdict.repairs) == sorted(row["repairs"])
        assert len(set(verdict.repairs)) == len(verdict.repairs)


def test_long_echo_is_capped() -> None:
    row = next(r for r in ROWS if r["id"] == "x-trunc-20k-write")
    message = parse_arguments(row["raw"], tool=row["tool"]).message
    assert message is not None
    assert f"first 500 of {len(row['raw'])} characters" in message
    assert "…" in message
    assert len(message) < 1000
