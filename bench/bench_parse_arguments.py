"""Benchmark ``parse_arguments`` against its baselines.

Run from the repository root: ``python bench/bench_parse_arguments.py``.

1. A valid 2 KB argument object: ``parse_arguments`` vs ``msgspec.json.decode`` alone
   (target: at most 1.5x).
2. The malformed vectors of ``../shared/vectors/tool_args.jsonl``: ``parse_arguments`` vs
   ``json_repair.loads`` (target: 20x faster or more), and how many vectors toolwire rejects
   that json_repair turns into a dict anyway (filling values, keeping one of two objects,
   completing truncation).

Timings are the minimum over several runs of many repetitions (``time.perf_counter_ns``).
"""

from __future__ import annotations

import json
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import json_repair
import msgspec

from toolwire.judge import parse_arguments

VECTORS = Path(__file__).resolve().parents[2] / "shared" / "vectors" / "tool_args.jsonl"


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


def main() -> None:
    rows: list[tuple[str, float, float, str]] = []

    raw = two_kb_object()
    ours = best_ns(lambda: parse_arguments(raw, tool="write"), 20_000)
    base = best_ns(lambda: msgspec.json.decode(raw), 20_000)
    rows.append((f"valid {len(raw)} B object", ours, base, "msgspec.json.decode"))

    vectors = [json.loads(line) for line in VECTORS.read_text("utf-8").splitlines() if line]
    malformed = [v for v in vectors if v["expect"] != "ok"]
    wrong: list[str] = []
    ours_total = 0.0
    theirs_total = 0.0
    ratios: list[float] = []
    for vector in malformed:
        text = vector["raw"]
        repeat = 20 if len(text) > 5000 else 300
        ours_ns = best_ns(lambda t=text: parse_arguments(t, tool="t"), repeat, runs=5)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            theirs_ns = best_ns(lambda t=text: json_repair.loads(t), repeat, runs=5)
        ours_total += ours_ns
        theirs_total += theirs_ns
        ratios.append(theirs_ns / ours_ns)
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
    speedup = theirs_total / ours_total
    print()
    overhead = rows[0][1] / rows[0][2]
    print(f"valid object: parse_arguments / msgspec = {overhead:.2f}x (target <= 1.5x)")
    print(f"malformed vectors: toolwire is {speedup:.1f}x faster than json_repair (target >= 20x)")
    ratios.sort()
    median = ratios[len(ratios) // 2]
    print(
        f"  per vector: median {median:.1f}x, min {ratios[0]:.1f}x, max {ratios[-1]:.1f}x "
        "(small inputs are dominated by fixed Python overhead)"
    )
    rejects = sum(1 for v in malformed if v["expect"] == "reject")
    print(f"json_repair returned a non-empty dict for {len(wrong)} of {rejects} vectors we reject:")
    for line in wrong:
        print(f"  {line}")


if __name__ == "__main__":
    main()
