"""What a schema check really costs against what toolwire prices it at (issue 29, H2).

Run from the repository root: ``python bench/bench_schema_cost.py [--size 100] [--runs 3]``.

For each hostile shape the judge must still accept (a pattern at the repetition bound, wide
``anyOf`` branches, references that double), the table prints the measured time of the
validator's yes/no check (the minimum over ``--runs``, ``--size`` KB of arguments) and the
estimate ``SchemaChecker.estimate_ns`` made of the same arguments before running anything. The
estimate decides where a call is checked (on the event loop up to 5 ms, else in a worker process
within a time budget), so it must never be far below the measure: the ``estimate / measured``
column stays at 1 or more. The estimate may be far above: a call priced too high is only checked
elsewhere, never wrongly.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections.abc import Callable
from typing import Any

from toolwire.judge._schema import SchemaChecker


def _random_text(alphabet: str, size: int) -> str:
    """Text that keeps many automaton states alive at once (the lazy DFA's worst case)."""
    rng = random.Random(7)
    return "".join(rng.choice(alphabet) for _ in range(size))


def _pattern(repeat: int) -> Callable[[int], tuple[dict[str, Any], Any]]:
    def build(size: int) -> tuple[dict[str, Any], Any]:
        schema = {"type": "object", "properties": {"s": {"pattern": f"a\\w{{{repeat}}}c"}}}
        return schema, {"s": _random_text("ab", size)}

    return build


def _any_of(branches: int) -> Callable[[int], tuple[dict[str, Any], Any]]:
    def build(size: int) -> tuple[dict[str, Any], Any]:
        items = {"anyOf": [{"const": f"v{i}"} for i in range(branches)]}
        schema = {"type": "object", "properties": {"xs": {"type": "array", "items": items}}}
        value = f"v{branches - 1}"  # each item matches the last branch only
        return schema, {"xs": [value] * max(1, size // (len(value) + 4))}

    return build


def _doubling(steps: int) -> Callable[[int], tuple[dict[str, Any], Any]]:
    """``oneOf`` two references to the previous definition, ``steps`` times: 2**steps paths for
    one value, all tried (``oneOf`` counts its matches; none of these branches can stop early).
    One value is enough: the first that fails ends the yes/no check."""

    def build(size: int) -> tuple[dict[str, Any], Any]:
        defs: dict[str, Any] = {"d0": {"oneOf": [{"const": 1}, {"const": 2}]}}
        for i in range(1, steps):
            ref = {"$ref": f"#/$defs/d{i - 1}"}
            defs[f"d{i}"] = {"oneOf": [ref, ref]}
        schema = {
            "$defs": defs,
            "type": "object",
            "properties": {"x": {"$ref": f"#/$defs/d{steps - 1}"}},
        }
        return schema, {"x": 1}

    return build


SHAPES: dict[str, Callable[[int], tuple[dict[str, Any], Any]]] = {
    "pattern a\\w{16}c": _pattern(16),
    "pattern a\\w{64}c": _pattern(64),
    "pattern a\\w{256}c (the bound)": _pattern(256),
    "items anyOf 50 consts": _any_of(50),
    "items anyOf 500 consts": _any_of(500),
    "$ref doubling x6, one value": _doubling(6),
    "$ref doubling x11, one value (the bound)": _doubling(11),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100, help="KB of arguments")
    parser.add_argument("--runs", type=int, default=3)
    options = parser.parse_args()
    print(f"{'shape':38} {'measured ms':>12} {'estimate ms':>12} {'estimate / measured':>20}")
    for name, build in SHAPES.items():
        schema, arguments = build(options.size * 1024)
        checker = SchemaChecker(schema)
        assert checker.validator is not None
        raw = json.dumps(arguments)
        best = float("inf")
        for _ in range(options.runs):
            start = time.perf_counter()
            checker.validator.is_valid(arguments)
            best = min(best, time.perf_counter() - start)
        estimate = checker.estimate_ns(raw) / 1e9
        print(f"{name:38} {best * 1e3:12.2f} {estimate * 1e3:12.2f} {estimate / best:20.1f}")


if __name__ == "__main__":
    main()
