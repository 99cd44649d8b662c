"""Worst-case benchmark of the judge: every adversarial shape at 10 KB, 100 KB and 1 MB.

Run from the repository root: ``python bench/bench_worst_case_judge.py [--sizes 10,100,1000]``
(``--ms`` prints milliseconds per call instead, e.g. ``--sizes 64,256,1000 --ms`` to choose the
size above which judging should leave the event loop).

Each shape is a text built to stress one thing the judge handles: long runs of blanks before a
closer (the old trailing-marker search), fences, prose, template markers, quote tokens, Python
literals, many objects, deep nesting, long runs of backslashes, quotes and braces, and a few
*typical* malformed inputs (a large object with relaxed syntax, a cut-off write). For each
size the table prints microseconds per KB (the minimum over a few runs): a judge that is linear
on every path shows the same figure in every column, so the last column (1 MB / 10 KB per-KB
ratio) stays near 1. A quadratic path shows as a ratio near 100.

The stream side (accumulating fragments) has its own benchmark; this one calls
``parse_arguments`` directly, with the default policy and a size limit above the largest text.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable

from toolwire.judge import Policy, parse_arguments

#: The size limit used here: above every text, so that each is really parsed.
POLICY = Policy(max_bytes=8 * 1024 * 1024)


def _repeat(unit: str, size: int) -> str:
    return unit * max(1, size // len(unit))


def _typical_object(size: int) -> dict[str, object]:
    rows = max(1, size // 60)
    return {
        "path": "src/app/main.py",
        "items": [{"name": f"item-{i}", "size": i * 37, "ok": i % 2 == 0} for i in range(rows)],
    }


def _relaxed(size: int) -> str:
    """A large object with bare keys, single-quoted keys, trailing commas and raw newlines."""
    rows = max(1, size // 48)
    body = ",\n".join(f"  {{name: \"x\", 'size': {i}, note: \"a\nb\",}}" for i in range(rows))
    return "{items: [\n" + body + ",\n],}"


#: name -> builder of a text of about ``size`` characters.
SHAPES: dict[str, Callable[[int], str]] = {
    # Runs of blanks before a closer, and the fence and marker patterns.
    "blanks before ]": lambda n: "x" + " " * n + "]",
    "newlines in open array": lambda n: '{"items": [1, 2,' + "\n" * n + "]",
    "fence never closed": lambda n: "```json\n{" + " " * n + "x",
    "fence, blanks before close": lambda n: '```json\n{"a": 1}' + " " * n + "```",
    "fence, backticks inside": lambda n: "```json\n" + _repeat("`` ", n) + "\n```",
    "markers at the end": lambda n: '{"a": 1}' + _repeat("<|im_end|> ", n),
    "markers at the start": lambda n: _repeat("<tool_call> ", n) + '{"a": 1}',
    "marker-like run": lambda n: '{"a": 1}' + _repeat("<|a", n) + ">",
    # Prose and many groups.
    "prose with apostrophes": lambda n: _repeat("it's ", n) + '{"a": 1}',
    "prose with {x} groups": lambda n: _repeat("{x} ", n) + '{"a": 1}',
    "many objects (ambiguous)": lambda n: _repeat('{"a": 1} ', n),
    "many broken groups": lambda n: _repeat('{"a" 1} ', n),
    "many bare groups": lambda n: _repeat("{a:b} ", n),
    # Strings and tokens.
    "quote tokens, unclosed": lambda n: "{a: <|\"|>" + "x" * n,
    "many quote tokens": lambda n: "{" + _repeat('k: <|"|>v<|"|>, ', n) + "z: 1}",
    "lone '<' run in object": lambda n: '{"a": 1, ' + "<" * n + "}",
    "python literal": lambda n: "{" + _repeat("'k': True, ", n) + "'z': None}",
    "python string, unclosed": lambda n: "{'a': '" + "x" * n,
    "python, raw line feeds": lambda n: "{'a': '" + _repeat("x\n", n) + "'}",
    "mismatched keys": lambda n: "{" + _repeat("\"k': 1, ", n) + '"z": 1}',
    "mismatched key, long body": lambda n: '{"' + "a" * n + "' 1}",
    "bare key words, no colon": lambda n: "{" + _repeat("a ", n) + "}",
    # Nesting and long runs of one character.
    "deep [": lambda n: "[" * n,
    'deep {"a":': lambda n: _repeat('{"a":', n),
    "deep {": lambda n: "{" * n + "}" * n,
    "wrapping braces": lambda n: "{" * 17 + '"a": 1' + "}" * (n - 23),
    "backslashes in a string": lambda n: '{"a": "' + "\\" * (n - (n % 2)) + '"}',
    "invalid escapes": lambda n: '{"a": "' + _repeat("\\d", n) + '"}',
    "quotes": lambda n: '"' * n,
    "single quotes in object": lambda n: "{" + "'" * n + "}",
    "closing braces": lambda n: '{"a": 1' + "}" * n,
    "long number": lambda n: '{"a": ' + "1" * n + "}",
    "double-encoded relaxed": lambda n: json.dumps(_relaxed(n)),
    # Typical malformed inputs, large.
    "typical: relaxed object": _relaxed,
    "typical: fenced object": lambda n: "```json\n" + json.dumps(_typical_object(n)) + "\n```",
    "typical: prose around": lambda n: "Sure:\n" + json.dumps(_typical_object(n)) + "\nDone.",
    "typical: python dict": lambda n: repr(_typical_object(n)),
    "typical: cut-off write": lambda n: json.dumps({"path": "a.py", "content": "x = 1\n" * n})[
        :n
    ],
    "typical: trailing comma": lambda n: json.dumps(_typical_object(n))[:-1] + ",}",
}


def best_seconds(text: str, runs: int) -> float:
    """The minimum over ``runs`` of one ``parse_arguments`` call on ``text``."""
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        parse_arguments(text, tool="t", policy=POLICY)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,100,1000", help="sizes in KB, comma-separated")
    parser.add_argument("--runs", type=int, default=3, help="runs per measurement (minimum)")
    parser.add_argument("--only", default=None, help="only shapes whose name contains this")
    parser.add_argument(
        "--ms", action="store_true", help="print milliseconds per call instead of us per KB"
    )
    args = parser.parse_args()
    sizes = [int(part) * 1000 for part in args.sizes.split(",")]
    header = "".join(f"{f'{size // 1000} KB':>12}" for size in sizes)
    unit = "ms per call" if args.ms else "us per KB"
    print(f"{f'shape ({unit})':<30}{header}{'ratio':>8}  outcome")
    worst = 0.0
    slowest = (0.0, "")
    for name, build in SHAPES.items():
        if args.only and args.only not in name:
            continue
        per_kb: list[float] = []
        cells: list[float] = []
        outcome = ""
        for size in sizes:
            text = build(size)
            seconds = best_seconds(text, args.runs)
            per_kb.append(seconds * 1e6 / (len(text) / 1000))
            cells.append(seconds * 1000 if args.ms else per_kb[-1])
            slowest = max(slowest, (seconds * 1000, f"{name} at {size // 1000} KB"))
            verdict = parse_arguments(text, tool="t", policy=POLICY)
            outcome = verdict.reason or verdict.outcome
        ratio = per_kb[-1] / per_kb[0]
        worst = max(worst, ratio)
        row = "".join(f"{value:>12.2f}" for value in cells)
        print(f"{name:<30}{row}{ratio:>8.2f}  {outcome}")
    print(f"\nworst per-KB ratio, largest / smallest size: {worst:.2f} (linear: about 1)")
    print(f"slowest call: {slowest[0]:.1f} ms ({slowest[1]})")


if __name__ == "__main__":
    main()
