"""What each layer of healing's data path costs for one upstream read, layer by layer.

Run: ``PYTHONPATH=bench .venv/bin/python bench/bench_heal_layers.py [--reads 200000]``

``bench_heal_data_path.py`` gives healing's cost per read as a whole (about 5 µs against 1.5 µs
for decoding and re-encoding each event); this says where it goes. One text read of
``load_upstream.py``'s turn (``data: {chunk}\\n\\n`` with one piece of text) is taken by each
layer alone, in a loop, hot in the caches, best of ``--rounds``; and one argument read of its
call (which stops at the mapper: a call goes on whole, once judged):

- ``sse``: the SSE decoder (``adapters/sse.py``) finds the event's payload;
- ``mapper``: the Chat mapper (``feed_bytes``) beyond the SSE decoder: the chunk decoded into
  its hot Struct, a ``TextDelta`` made (for the argument read: the piece added to its call);
- ``steps``: the runner's fused steps, the judge's look at the batch (``FusedSteps.apply``);
- ``generators``: the three async generators a batch crosses (the reading loop, the turn's
  observer, the healed stream);
- ``session``: the healing session takes the event and the encoder writes the client's chunk;
- ``frame``: that chunk encoded and framed as ``data:``.

Beside them, the floor any proxy that rewrites the stream pays for the same read: the event's
JSON decoded, encoded again and framed (msgspec). The layers' sum is what healing pays per text
read beyond passing the bytes on (within the generators' and the observer's small share).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import AsyncGenerator, Callable
from typing import Any, NamedTuple

import anyio
import msgspec
from bench_heal_data_path import _request, upstream_pieces

_decode = msgspec.json.Decoder().decode
_encode = msgspec.json.Encoder().encode


def _best(run: Callable[[], object], reads: int, rounds: int) -> float:
    """Microseconds per call of ``run``, the best of ``rounds`` loops of ``reads`` calls."""
    best = float("inf")
    for _ in range(rounds):
        start = time.process_time()
        for _ in range(reads):
            run()
        best = min(best, (time.process_time() - start) / reads * 1e6)
    return best


async def _best_async(run: Callable[[], Any], reads: int, rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.process_time()
        for _ in range(reads):
            await run()
        best = min(best, (time.process_time() - start) / reads * 1e6)
    return best


class _Turn(NamedTuple):
    """The reads of ``load_upstream.py``'s turn this bench takes."""

    opening: list[bytes]  #: the reads before the first text piece
    text: bytes  #: the first read with a piece of text
    call: bytes  #: the call's first read (its name)
    argument: bytes  #: the call's next read: one argument piece


def _turn() -> _Turn:
    pieces = upstream_pieces(4)

    def delta(piece: bytes) -> dict[str, Any]:
        choices = _decode(piece[6:]).get("choices") if piece.startswith(b"data: {") else None
        return choices[0]["delta"] if choices else {}

    text = next(piece for piece in pieces if delta(piece).get("content"))
    calls = [piece for piece in pieces if b'"arguments"' in piece]
    return _Turn(pieces[: pieces.index(text)], text, calls[0], calls[1])


def _argument_read(turn: _Turn, reads: int, rounds: int) -> float:
    """Microseconds per argument read through a mapper, best of ``rounds``: a fresh mapper per
    200 reads, so that the call never grows past what a real one holds (made outside the timing)."""
    from toolwire.adapters.openai_chat.mapper import OpenAIChatMapper

    best = float("inf")
    for _ in range(rounds):
        spent = 0.0
        batches = max(1, reads // 200)
        for _ in range(batches):
            mapper = OpenAIChatMapper()
            for piece in (*turn.opening, turn.call):
                mapper.feed_bytes(piece)
            start = time.process_time()
            for _ in range(200):
                mapper.feed_bytes(turn.argument)
            spent += time.process_time() - start
        best = min(best, spent / (batches * 200) * 1e6)
    return best


async def _hops(reads: int, rounds: int) -> float:
    """Three async generators, each handing a batch on: the reading loop, the turn's observer
    and the healed stream, less the loop that drives them."""
    batch = [object()]

    async def source() -> AsyncGenerator[list[object]]:
        while True:
            yield batch

    async def hop(inner: AsyncGenerator[list[object]]) -> AsyncGenerator[list[object]]:
        async for item in inner:
            yield item

    chained = hop(hop(hop(source())))
    direct = source()
    through = await _best_async(chained.__anext__, reads, rounds)
    alone = await _best_async(direct.__anext__, reads, rounds)
    return through - alone


def measure(reads: int, rounds: int) -> dict[str, float]:
    """Microseconds per read of each layer, and of the floor."""
    from toolwire.adapters.openai_chat.healing import CHAT
    from toolwire.adapters.openai_chat.mapper import OpenAIChatMapper
    from toolwire.adapters.sse import SSEDecoder
    from toolwire.api import Pipeline
    from toolwire.core.events import TextDelta
    from toolwire.core.runner import FusedSteps
    from toolwire.heal.session import HealSession
    from toolwire.heal.transport import _fed
    from toolwire.stages.judge import JudgeStage

    turn = _turn()
    text = turn.text
    out: dict[str, float] = {}
    decoder = SSEDecoder()
    out["sse"] = _best(lambda: decoder.feed(text).payloads, reads, rounds)
    mapper = OpenAIChatMapper()
    for piece in turn.opening:
        mapper.feed_bytes(piece)
    whole_mapper = _best(lambda: mapper.feed_bytes(text), reads, rounds)
    out["mapper"] = whole_mapper - out["sse"]
    (event,) = mapper.feed_bytes(text)
    assert type(event) is TextDelta

    tools = json.loads(_request().content)["tools"]
    steps = FusedSteps([JudgeStage(tools=tools).start()])
    batch = [event]
    out["steps"] = anyio.run(_best_async, lambda: steps.apply(batch), reads, rounds)
    out["generators"] = anyio.run(_hops, reads, rounds)

    plan = CHAT.plan_request(_request().content)
    assert plan is not None
    session = HealSession(plan.body, Pipeline("openai").next_messages, wire=CHAT)
    _fed(session, batch)  # the role chunk goes out first
    out["session"] = _best(lambda: _fed(session, batch), reads, rounds)
    items = _fed(session, batch)
    out["frame"] = _best(lambda: CHAT.frame(items), reads, rounds)
    layers = ("sse", "mapper", "steps", "generators", "session", "frame")
    out["layers"] = sum(out[name] for name in layers)

    payload = text[6:-2]
    out["floor"] = _best(lambda: b"data: " + _encode(_decode(payload)) + b"\n\n", reads, rounds)

    out["argument read, sse and mapper"] = _argument_read(turn, reads, rounds)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--reads", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    out = measure(args.reads, args.rounds)
    print("one text read, µs of CPU per layer (best of rounds)")
    for name, value in out.items():
        print(f"{name:<32}{value:>8.2f}")
    print(f"layers / floor: {out['layers'] / out['floor']:.1f}x")


if __name__ == "__main__":
    main()
