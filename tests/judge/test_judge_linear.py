"""The judge runs in time linear in its input, on every path.

Each shape below once took time growing with the square of its length (a searched regex with an
unbounded run inside, a scan restarted from 0 per group, a slice per layer...). The test checks
*growth*, not an absolute time, so that it holds on a slow or busy machine: the time at 8x the
size must stay below 20x the time at 1x (a quadratic path gives about 64x), each time the
minimum over a few runs. Times are the process's CPU time (``time.process_time``): at 2-4x
load the wall clock gave ratios of 23-34x for linear shapes, because a neighbour's time slices
land more often in the longer run; CPU time is what the algorithm costs. The reproducers from
the report also get their verdict checked.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from toolwire.judge import Policy, parse_arguments
from toolwire.judge._text_repairs import strip_fence, strip_template_markers

pytestmark = pytest.mark.slow  # see docs/development.md

SMALL = 8_000
GROWTH = 8
MAX_RATIO = 20.0
POLICY = Policy(max_bytes=4 * 1024 * 1024)


def _repeat(unit: str, size: int) -> str:
    return unit * max(1, size // len(unit))


SHAPES: dict[str, Callable[[int], str]] = {
    # The reproducers of the report.
    "blanks before ]": lambda n: "x" + " " * n + "]",
    "newlines in an open array": lambda n: '{"items": [1, 2,' + "\n" * n + "]",
    "fence never closed": lambda n: "```json\n{" + " " * n + "x",
    # Found while hunting.
    "blanks before a closing fence": lambda n: '```json\n{"a": 1}' + " " * n + "```",
    "markers at the end": lambda n: '{"a": 1}' + _repeat(" <|im_end|>", n),
    "markers at the start": lambda n: _repeat("<tool_call> ", n) + '{"a": 1}',
    "prose with {x} groups": lambda n: _repeat("{x} ", n) + '{"a": 1}',
    "many objects": lambda n: _repeat('{"a": 1} ', n),
    "many broken objects": lambda n: _repeat('{"a" 1} ', n),
    "many relaxed groups that fail": lambda n: _repeat("{a:b} ", n),
    "many keys closed by the wrong quote": lambda n: "{" + _repeat("\"k': 1, ", n) + '"z": 1}',
    "lone < in an object": lambda n: '{"a": 1, ' + "<" * n + "}",
    "apostrophes in an object": lambda n: "{" + "'" * n + "}",
    "bare words, no colon": lambda n: "{" + _repeat("a ", n) + "}",
    "quote token never closed": lambda n: '{a: <|"|>' + "x" * n,
    "python string never closed": lambda n: "{'a': '" + "x" * n,
    "deep [": lambda n: "[" * n,
    "deep {": lambda n: "{" * (n // 2) + "}" * (n // 2),
    "deep keys": lambda n: _repeat('{"a":', n),
    "backslashes": lambda n: '{"a": "' + "\\" * (n - n % 2) + '"}',
    "invalid escapes": lambda n: '{"a": "' + _repeat("\\d", n) + '"}',
    "long string with escapes, cut": lambda n: '{"a": "' + _repeat("x\\n", n),
    "double-encoded relaxed object": lambda n: '"{' + _repeat("k: 1, ", n) + 'z: 2}"',
    "relaxed object": lambda n: "{" + _repeat("k: 'x', ", n) + "z: [1,],}",
}


def _best(text: str, runs: int = 3) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.process_time()
        parse_arguments(text, tool="t", policy=POLICY)
        best = min(best, time.process_time() - start)
    return best


@pytest.mark.parametrize("shape", SHAPES)
def test_time_grows_linearly(shape: str) -> None:
    build = SHAPES[shape]
    small, large = build(SMALL), build(SMALL * GROWTH)
    parse_arguments(small, tool="t", policy=POLICY)  # warm caches (compiled patterns)
    ratio = _best(large) / _best(small)
    assert ratio < MAX_RATIO, f"{shape}: {GROWTH}x the text took {ratio:.1f}x the time"


@pytest.mark.parametrize(
    "strip",
    [strip_fence, strip_template_markers],
    ids=["fence", "markers"],
)
def test_edge_repairs_grow_linearly(strip: Callable[[str], object]) -> None:
    def best(text: str) -> float:
        times = []
        for _ in range(3):
            start = time.process_time()
            strip(text)
            times.append(time.process_time() - start)
        return min(times)

    def shape(n: int) -> str:
        return "```json\n{" + " " * n + "x]"

    ratio = best(shape(SMALL * GROWTH)) / best(shape(SMALL))
    assert ratio < MAX_RATIO


def test_the_reported_reproducers_are_fast_and_right() -> None:
    cases = [
        ("x" + " " * 64_000 + "]", "not_json"),
        ('{"items": [1, 2,' + "\n" * 20_000 + "]", "truncated"),
    ]
    for raw, reason in cases:
        start = time.process_time()
        verdict = parse_arguments(raw, tool="t")
        assert time.process_time() - start < 1.0  # was 44 s and 10 s
        assert (verdict.outcome, verdict.reason) == ("rejected", reason)
    assert strip_fence("```json\n{" + " " * 32_000 + "x") is None


def test_markers_and_fences_nested_deeply_cost_one_layer_each() -> None:
    # Each edge repair applies once per path: ten thousand nested fences are not peeled one by
    # one (which was quadratic, and deep enough to overflow the stack); past the first of each,
    # the rest is text around the one object.
    raw = "<tool_call>```json\n" * 5_000 + '{"a": 1}' + "\n```</tool_call>" * 5_000
    start = time.process_time()
    verdict = parse_arguments(raw, tool="t")
    assert time.process_time() - start < 1.0
    assert verdict.repairs == ("template_markers", "fence", "prose")
    assert verdict.arguments == {"a": 1}
    inner = "<tool_call>```json\n" + '{"a": 1}' + "\n```</tool_call>"
    assert parse_arguments(inner, tool="t").repairs == ("template_markers", "fence")
