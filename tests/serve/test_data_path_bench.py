"""``bench/bench_heal_data_path.py`` measures what it says: healing's real data path.

The bench refuses to print figures when the healed response is not the upstream's turn (every
text piece, the call, ``[DONE]``): a refusal or an error measured instead would be cheap and
meaningless. These tests hold that check to both outcomes and run the bench once, briefly (no
timing is asserted: the figures are the bench's to report).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from types import ModuleType

import anyio
import pytest

from .bench_scripts import imported, run_bench


@pytest.fixture
def bench() -> Iterator[ModuleType]:
    with imported("bench_heal_data_path") as module:
        yield module


def test_the_healed_turn_passes_the_check(bench: ModuleType) -> None:
    pieces = bench.upstream_pieces(4)
    body = anyio.run(bench.healed_body, pieces)
    bench.check_healed(pieces, body)


@pytest.mark.parametrize(
    "spoil",
    [
        lambda body: body.replace(b'"name":"write"', b'"name":"other"'),  # another call
        lambda body: body.replace(b'"content":"t', b'"content":"x', 1),  # other text
        lambda body: body.removesuffix(b"data: [DONE]\n\n"),  # no end marker
        lambda body: body[: body.index(b'"tool_calls"')],  # cut in the middle of an event
    ],
    ids=["call", "text", "done", "cut"],
)
def test_a_response_that_is_not_the_turn_stops_the_bench(
    bench: ModuleType, spoil: Callable[[bytes], bytes]
) -> None:
    pieces = bench.upstream_pieces(4)
    body = anyio.run(bench.healed_body, pieces)
    spoiled = spoil(body)
    assert spoiled != body
    with pytest.raises(SystemExit):
        bench.check_healed(pieces, spoiled)


def test_the_bench_runs_and_prints_each_variant() -> None:
    done = run_bench(
        "bench_heal_data_path.py", "--rounds", "1", "--requests", "3", "--chunks", "2"
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert [line.split()[0] for line in lines[2:6]] == ["pass", "decode", "rewrite", "heal"]
    assert lines[6].startswith("to the first piece: pass ")


def test_the_whole_completion_is_the_turn_and_a_spoiled_one_stops_the_bench(
    bench: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--whole``: the turn as one completion (its text joined, its call whole), healed and
    checked like the stream; another text or call stops the bench."""
    pieces = [bench.whole_body(bench.upstream_pieces(4))]
    monkeypatch.setattr(bench, "WHOLE", True)
    body = anyio.run(bench.healed_body, pieces)
    bench.check_healed(pieces, body)
    for spoiled in (
        body.replace(b'"name":"write"', b'"name":"other"'),
        body.replace(b'"content":"t', b'"content":"x', 1),
        body[: len(body) // 2],
    ):
        assert spoiled != body
        with pytest.raises(SystemExit):
            bench.check_healed(pieces, spoiled)
    done = run_bench("bench_heal_data_path.py", "--whole", "--rounds", "1", "--requests", "3")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("1 reads, ")


def test_the_layers_bench_runs_and_prints_each_layer() -> None:
    """``bench_heal_layers.py`` takes a real text read through each layer (it asserts that the
    mapper made a ``TextDelta`` of it) and prints every layer, the floor and the ratio."""
    done = run_bench("bench_heal_layers.py", "--reads", "400", "--rounds", "1")
    assert done.returncode == 0, done.stdout + done.stderr
    names = [line.rsplit(maxsplit=1)[0] for line in done.stdout.splitlines()[1:-1]]
    assert names == [
        "sse", "mapper", "steps", "generators", "session", "frame", "layers", "floor",
        "argument read, sse and mapper",
    ]  # fmt: skip
    assert done.stdout.splitlines()[-1].startswith("layers / floor: ")


def test_busy_work_runs_before_every_piece_and_leaves_the_turn_whole(
    bench: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--busy N``: N rounds of h11 reading a response to its end before each piece, in every
    variant alike, and the healed turn is still the upstream's."""
    rounds: list[None] = []
    busy = bench._busy

    def counted() -> None:
        busy()
        rounds.append(None)

    monkeypatch.setattr(bench, "_busy", counted)
    monkeypatch.setattr(bench, "BUSY", 2)
    pieces = bench.upstream_pieces(3)
    body = anyio.run(bench.healed_body, pieces)
    bench.check_healed(pieces, body)
    assert len(rounds) == 2 * len(pieces)
    rounds.clear()
    assert anyio.run(bench.variants(pieces)["pass"]) == sum(map(len, pieces))
    assert len(rounds) == 2 * len(pieces)
