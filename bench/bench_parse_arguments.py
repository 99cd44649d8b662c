"""Benchmark ``parse_arguments`` against its baselines.

Run from the repository root: ``python bench/bench_parse_arguments.py``.

1. A valid 2 KB argument object: ``parse_arguments`` vs ``msgspec.json.decode`` alone
   (target: at most 1.5x).
2. The malformed vectors of ``tests/data/vectors/tool_args.jsonl``: ``parse_arguments`` vs
   ``json_repair.loads``, as the ratio of the totals (target: 20x faster or more) and as the
   median of the per-vector ratios (target: 5x or more; small inputs are dominated by fixed
   per-call costs, so the median is the harder figure), printed side by side; then how many
   vectors toolwire rejects that json_repair turns into a dict anyway (filling values, keeping
   one of two objects, completing truncation).
3. That every vector still meets its expectation (outcome, reason, arguments, repairs): a
   speed-up that loses a vector is not one. ``--per-vector`` prints each vector's figures.

Timings are the minimum over several runs of many repetitions (``time.perf_counter_ns``).
Run it on a quiet machine: other processes on the same cores move the per-vector figures.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import json_repair
import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from data_paths import VECTORS as VECTOR_FILES

from toolwire.judge import parse_arguments

VECTORS = VECTOR_FILES / "tool_args.jsonl"


def best_ns(function: Callable[[], object], repeat: int, runs: int = 7) -> float:
    """The minimum over ``runs`` of the mean time of ``repeat`` calls, in nanoseconds."""
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter_ns()
        for _ in range(repeat):
            function()
        best = min(best, (time.perf_counter_ns() - start) / repeat)
    return best


def two_kb_object() -> str:
    value: dict[str, Any] = {
        "path": "src/toolwire/judge/_core.py",
        "content": "def main() -> None:\n    print('hello')\n" * 12,
        "options": {"overwrite": True, "mode": 420, "encoding": "utf-8", "tags": ["a", "b"]},
        "items": [{"name": f"item-{i}", "size": i * 37, "ok": i % 2 == 0} for i in range(27)],
    }
    raw = json.dumps(value)
    assert 1800 <= len(raw) <= 2300, len(raw)
    return raw


OUTCOME = {"ok": "ok", "repair": "repaired", "reject": "rejected"}


def expectation_met(vector: dict[str, Any]) -> bool:
    """True when toolwire's verdict is the one the vector expects (debatable ones: any)."""
    verdict = parse_arguments(vector["raw"], tool=vector["tool"])
    if vector["debatable"]:
        return True
    if verdict.outcome != OUTCOME[vector["expect"]]:
        return False
    if verdict.outcome == "rejected":
        return bool(verdict.reason == vector["reject_category"])
    same_value = json.dumps(verdict.arguments, sort_keys=True) == json.dumps(
        vector["expected_args"], sort_keys=True
    )
    return same_value and sorted(verdict.repairs) == sorted(vector["repairs"])


def median(values: list[float]) -> float:
    """The middle value (the mean of the two middle ones for an even count)."""
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--per-vector", action="store_true", help="print every vector's ratio")
    args = parser.parse_args()
    rows: list[tuple[str, float, float, str]] = []

    raw = two_kb_object()
    ours = best_ns(lambda: parse_arguments(raw, tool="write"), 20_000)
    base = best_ns(lambda: msgspec.json.decode(raw), 20_000)
    rows.append((f"valid {len(raw)} B object", ours, base, "msgspec.json.decode"))

    vectors = [json.loads(line) for line in VECTORS.read_text("utf-8").splitlines() if line]
    missed = [v["id"] for v in vectors if not expectation_met(v)]
    malformed = [v for v in vectors if v["expect"] != "ok"]
    wrong: list[str] = []
    ours_total = 0.0
    theirs_total = 0.0
    ratios: list[tuple[float, str, float, float]] = []
    for vector in malformed:
        text = vector["raw"]
        repeat = 20 if len(text) > 5000 else 300
        ours_ns = best_ns(lambda t=text: parse_arguments(t, tool="t"), repeat, runs=7)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            theirs_ns = best_ns(lambda t=text: json_repair.loads(t), repeat, runs=7)
        ours_total += ours_ns
        theirs_total += theirs_ns
        ratios.append((theirs_ns / ours_ns, vector["id"], ours_ns, theirs_ns))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = json_repair.loads(text)
        if vector["expect"] == "reject" and isinstance(result, dict) and result:
            wrong.append(f"{vector['id']} -> {json.dumps(result)[:60]}")
    rows.append(
        (f"{len(malformed)} malformed vectors (sum)", ours_total, theirs_total, "json_repair.loads")
    )

    print(f"{'case':<34} {'toolwire':>12} {'baseline':>12} {'ratio':>8}  baseline")
    for name, ours_ns, base_ns, label in rows:
        ratio = ours_ns / base_ns
        ours_us, base_us = ours_ns / 1000, base_ns / 1000
        print(f"{name:<34} {ours_us:>10.2f}us {base_us:>10.2f}us {ratio:>7.2f}x  {label}")
    print()
    overhead = rows[0][1] / rows[0][2]
    print(f"valid object: parse_arguments / msgspec = {overhead:.2f}x (target <= 1.5x)")
    speedups = [ratio for ratio, _, _, _ in ratios]
    total = theirs_total / ours_total
    print(
        f"malformed vectors, toolwire faster than json_repair: total {total:.1f}x "
        f"(target >= 20x) | median per vector {median(speedups):.1f}x (target >= 5x) | "
        f"min {min(speedups):.1f}x, max {max(speedups):.1f}x"
    )
    at_least_5 = sum(1 for ratio in speedups if ratio >= 5)
    print(f"  vectors at 5x or more: {at_least_5} of {len(speedups)}")
    if args.per_vector:
        for ratio, name, ours_ns, theirs_ns in sorted(ratios):
            ours_us, theirs_us = ours_ns / 1000, theirs_ns / 1000
            print(f"  {ratio:>7.1f}x  {ours_us:>9.2f}us  {theirs_us:>10.2f}us  {name}")
    print(f"vectors whose expectation is met: {len(vectors) - len(missed)} of {len(vectors)}")
    for name in missed:
        print(f"  MISSED {name}")
    rejects = sum(1 for v in malformed if v["expect"] == "reject")
    print(f"json_repair returned a non-empty dict for {len(wrong)} of {rejects} vectors we reject:")
    for line in wrong:
        print(f"  {line}")


if __name__ == "__main__":
    main()
