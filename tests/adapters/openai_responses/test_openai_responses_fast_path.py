"""The Responses mapper's fast path changes nothing: the same events as the general path, always.

An argument delta for an open call in sequence skips the handler chain
(``OpenAIResponsesMapper._frames``). :class:`GeneralPathMapper` turns it off (every event
through the general path, as the mapper read before it had a fast path), and every
body here (each recording, hand-built bodies with each framing variant, and every event of every
recording damaged, dropped or replayed) must give byte-identical events both ways, split at
every byte and however hypothesis splits it. (That the SSE decoder's bulk framing equals its
line-by-line framing is ``test_sse_bulk.py``.)
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from _mapper_properties import normalized, property_settings, split_after, split_at
from _toolwire_testdata import STREAMS, load_stream, quick_sample
from hypothesis import given
from hypothesis import strategies as st

from toolwire.adapters.framing import Frames
from toolwire.adapters.openai_responses import OpenAIResponsesMapper
from toolwire.adapters.openai_responses.calls import FunctionCalls
from toolwire.adapters.sse import DEFAULT_MAX_EVENT_BYTES
from toolwire.core.events import Event
from toolwire.core.mapper import MapperSettings

FOLDER = "openai-responses"
RECORDINGS = [
    f"{FOLDER}/{p.name}" for p in sorted((STREAMS / FOLDER).iterdir()) if p.suffix == ".sse"
]
SETTINGS = {
    "default": MapperSettings(),
    "no_deltas": MapperSettings(argument_deltas=False),
    # Small enough that calls go too_large part way (the hot path must hand them over).
    "small_limit": MapperSettings(max_argument_chars=40),
}
_EVENT_END = re.compile(rb"\n\n")


class GeneralPathMapper(OpenAIResponsesMapper):
    """The mapper with its fast path off: every event through the general path."""

    def _frames(self, frames: Frames, out: list[Event]) -> None:
        for number, payload in enumerate(frames.payloads):
            self._message(frames.name(number), payload, out)


def run(mapper: OpenAIResponsesMapper, reads: list[bytes]) -> list[Event]:
    """Every read fed (even after the end, which must be ignored alike), then finished."""
    events: list[Event] = []
    for read in reads:
        events.extend(mapper.feed_bytes(read))
    events.extend(mapper.finish())
    return events


def same(fast: list[Event], general: list[Event]) -> bool:
    """Equal events; synthesized ids (random per stream) named by their first use."""
    return fast == general or normalized(fast) == normalized(general)


def check_same(body: bytes, reads: list[bytes], settings: MapperSettings) -> None:
    assert b"".join(reads) == body
    fast = run(OpenAIResponsesMapper(settings), reads)
    general = run(GeneralPathMapper(settings), reads)
    assert same(fast, general), f"reads of sizes {[len(read) for read in reads]}"


def check_every_split(body: bytes, settings: MapperSettings, step: int = 1) -> None:
    """The body in two reads split at every byte (every ``step`` bytes), and byte by byte."""
    general = run(GeneralPathMapper(settings), [body])
    for cut in range(0, len(body) + 1, step):
        fast = run(OpenAIResponsesMapper(settings), [body[:cut], body[cut:]])
        assert same(fast, general), f"split at byte {cut}"
    check_same(body, [body[i : i + 1] for i in range(len(body))], settings)


# -- hand-built bodies: every framing the fast path reads or must leave to the decoder ----------


def _event(payload: dict[str, Any], *, named: bool = True, data_first: bool = False) -> bytes:
    data = b"data: " + json.dumps(payload, separators=(",", ":")).encode()
    if not named:
        return data + b"\n\n"
    name = b"event: " + payload.get("type", "unnamed").encode()
    return (data + b"\n" + name if data_first else name + b"\n" + data) + b"\n\n"


def _call_payloads(*, numbered: bool = True, faults: bool = False) -> list[dict[str, Any]]:
    call = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "write",
            "arguments": "", "status": "in_progress"}  # fmt: skip
    text = json.dumps({"path": "a.py", "content": "print(1)\n" * 6})
    pieces = [text[i : i + 5] for i in range(0, len(text), 5)]
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {"id": "r", "model": "m", "output": []}},
        {"type": "response.output_item.added", "output_index": 0, "item": call},
    ]
    for number, piece in enumerate(pieces):
        events.append({"type": "response.function_call_arguments.delta", "item_id": "fc_1",
                       "output_index": 0, "delta": piece})  # fmt: skip
        if faults and number == 3:
            events += [
                {"type": "response.function_call_arguments.delta", "item_id": "fc_9",
                 "output_index": 0, "delta": "x"},  # an item that never started
                {"type": "response.function_call_arguments.delta", "item_id": "fc_1",
                 "output_index": 0, "delta": 7},  # no text
                {"type": "response.function_call_arguments.delta", "output_index": 0,
                 "delta": ""},  # by position, empty
                {"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 1,
                 "content_index": 0, "delta": "hi"},
            ]  # fmt: skip
    done = {**call, "arguments": text, "status": "completed"}
    events += [
        {"type": "response.function_call_arguments.done", "item_id": "fc_1", "output_index": 0,
         "arguments": text},
        {"type": "response.output_item.done", "output_index": 0, "item": done},
    ]  # fmt: skip
    if faults:
        events.append({"type": "response.function_call_arguments.delta", "item_id": "fc_1",
                       "output_index": 0, "delta": "late"})  # fmt: skip
    events.append({"type": "response.completed", "response": {
        "id": "r", "model": "m", "status": "completed", "output": [done]}})  # fmt: skip
    if numbered:
        for number, event in enumerate(events):
            event["sequence_number"] = number
    return events


def _body(events: list[dict[str, Any]], **how: bool) -> bytes:
    return b"".join(_event(event, **how) for event in events)


def _replayed_and_lost(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Event 5 sent twice (a replay), event 9 never (a gap)."""
    return [*events[:6], events[5], *events[6:9], *events[10:]]


BUILT: dict[str, bytes] = {
    "named": _body(_call_payloads()),
    "unnamed": _body(_call_payloads(), named=False),
    "event_line_after_data": _body(_call_payloads(), data_first=True),
    "no_sequence_numbers": _body(_call_payloads(numbered=False)),
    "faults": _body(_call_payloads(faults=True)),
    "replayed_and_lost": _body(_replayed_and_lost(_call_payloads())),
    "mixed_named_and_unnamed": b"".join(
        _event(event, named=number % 7 != 3) for number, event in enumerate(_call_payloads())
    ),
    "crlf": _body(_call_payloads()).replace(b"\n", b"\r\n"),
    "byte_order_mark": b"\xef\xbb\xbf" + _body(_call_payloads()),
    "comments_and_ids": _body(_call_payloads()).replace(
        b"\n\nevent: response.output_item", b"\n\n: ping\nid: 4\n\nevent: response.output_item"
    ),
    "blank_lines_and_empty_data": _body(_call_payloads()).replace(b"\n\n", b"\n\n\ndata:\n\n", 3),
    "data_without_space": _body(_call_payloads()).replace(b"data: {", b"data:{", 9),
    "two_data_lines": _body(_call_payloads()).replace(b',"delta"', b'\ndata: ,"delta"', 4),
    "named_event_without_data": _body(_call_payloads()).replace(
        b"\n\nevent: response.function_call_arguments.done",
        b"\n\nevent: lonely\n\nevent: response.function_call_arguments.done",
    ),
    "not_json_and_done_marker": _body(_call_payloads()).replace(
        b"\n\nevent: response.output_item.done",
        b"\n\ndata: {nope\n\ndata: [DONE]\n\nevent: x\ndata: \n\nevent: response.output_item.done",
        1,
    ),
    "typeless_payload_named_by_event_line": _body(_call_payloads()).replace(
        b'"type":"response.function_call_arguments.delta",', b"", 5
    ),
    # A CR inside a line ends it for the decoder: the payload is cut in two (not JSON).
    "carriage_return_inside_a_line": _body(_call_payloads()).replace(b',"delta"', b',\r"delta"', 3),
    "carriage_return_after_a_name": _body(_call_payloads()).replace(
        b"delta\ndata", b"delta\r\ndata"
    ),
    # Two events merged by an ``id:`` line in place of their blank line: one event for the
    # decoder (the second name, both data lines), with the lines of two simple events around it.
    "id_line_inside_an_event": _body(_call_payloads()).replace(
        b"}\n\nevent: response.function_call_arguments.delta",
        b"}\nid: 1\nevent: response.function_call_arguments.delta",
        1,
    ),
    "id_line_inside_an_unnamed_event": _body(_call_payloads(), named=False).replace(
        b"}\n\ndata: ", b"}\nid: 1\ndata: ", 3
    ),
    "no_terminator": _body(_call_payloads()[:-1]) + b"event: response.output_text.delta\ndata: {",
}


def test_the_fast_paths_are_taken() -> None:
    """Otherwise this file would compare the general path with itself."""
    body = BUILT["named"]
    mapper = OpenAIResponsesMapper()
    delta = FunctionCalls.delta
    calls_to_general = 0

    def counting(self: FunctionCalls, *args: Any) -> None:
        nonlocal calls_to_general
        calls_to_general += 1
        delta(self, *args)

    FunctionCalls.delta = counting  # type: ignore[method-assign]
    try:
        mapper.feed_bytes(body)
    finally:
        FunctionCalls.delta = delta  # type: ignore[method-assign]
    assert calls_to_general == 0


@pytest.mark.parametrize("name", RECORDINGS)
@pytest.mark.slow
def test_every_recording_at_every_split(name: str) -> None:
    check_every_split(load_stream(name), SETTINGS["default"])


@pytest.mark.parametrize("name", BUILT)
@pytest.mark.slow
def test_every_built_body_at_every_split(name: str) -> None:
    check_every_split(BUILT[name], SETTINGS["default"])


#: Every body with each other setting; the quick loop runs every 3rd pairing (both settings).
OTHER_SETTINGS = quick_sample(
    [(name, setting) for name in [*RECORDINGS, *BUILT] for setting in ("no_deltas", "small_limit")],
    3,
    covers=(lambda case: case[1],),
)


@pytest.mark.parametrize(("name", "setting"), OTHER_SETTINGS)
def test_other_settings_at_many_splits(name: str, setting: str) -> None:
    body = BUILT[name] if name in BUILT else load_stream(name)
    check_every_split(body, SETTINGS[setting], step=13)


@pytest.mark.parametrize("name", [*RECORDINGS, *BUILT])
@property_settings(max_examples=60)
@given(data=st.data())
def test_any_rechunking(name: str, data: st.DataObject) -> None:
    body = BUILT[name] if name in BUILT else load_stream(name)
    cuts = data.draw(st.lists(st.integers(min_value=0, max_value=len(body)), max_size=30))
    setting = data.draw(st.sampled_from(sorted(SETTINGS)))
    check_same(body, split_at(body, cuts), SETTINGS[setting])


def _reads_ending_after(body: bytes, pattern: bytes) -> list[bytes]:
    return split_after(body, re.compile(re.escape(pattern)))


@pytest.mark.parametrize("name", [*RECORDINGS, *BUILT])
def test_reads_that_end_on_line_boundaries(name: str) -> None:
    """Reads that end after every line, after each ``event:`` line, after each data line."""
    body = BUILT[name] if name in BUILT else load_stream(name)
    lines = _reads_ending_after(body, b"\n")
    for reads in (
        lines,
        _reads_ending_after(body, b"\n\n"),
        [b"".join(lines[i : i + 2]) for i in range(0, len(lines), 2)],
        [b"".join(lines[i : i + 3]) for i in range(0, len(lines), 3)],
        [lines[0], *[b"".join(lines[i : i + 3]) for i in range(1, len(lines), 3)]],
        [b"".join(lines[:2]), *[b"".join(lines[i : i + 3]) for i in range(2, len(lines), 3)]],
        # Reads that cut an event after its name, with whole events before the cut.
        _alternating(lines, first=1, sizes=(6, 3)),
        _alternating(lines, first=2, sizes=(6, 3)),
        _alternating(lines, first=1, sizes=(9, 3)),
    ):
        for setting in SETTINGS.values():
            check_same(body, [read for read in reads if read], setting)


def _alternating(lines: list[bytes], *, first: int, sizes: tuple[int, int]) -> list[bytes]:
    """``first`` lines, then reads of ``sizes[0]`` and ``sizes[1]`` lines in turn."""
    reads, start, turn = [b"".join(lines[:first])], first, 0
    while start < len(lines):
        size = sizes[turn % 2]
        reads.append(b"".join(lines[start : start + size]))
        start += size
        turn += 1
    return reads


@pytest.mark.parametrize("name", [*RECORDINGS, *BUILT])
@property_settings(max_examples=40)
@given(data=st.data())
def test_any_rechunking_on_line_ends(name: str, data: st.DataObject) -> None:
    body = BUILT[name] if name in BUILT else load_stream(name)
    ends = [match.end() for match in re.finditer(rb"\n", body)]
    cuts = data.draw(st.lists(st.sampled_from(ends), max_size=30)) if ends else []
    check_same(body, split_at(body, cuts), SETTINGS["default"])


def test_an_event_over_the_cap_after_an_event_with_no_number() -> None:
    """The event over the cap stands for one number only if the event before it had none."""
    events = _call_payloads()
    del events[4]["sequence_number"]
    big = b"event: response.output_text.delta\ndata: " + b"x" * DEFAULT_MAX_EVENT_BYTES + b"\n\n"
    body = _body(events[:5]) + big + _body(events[5:])
    for cut in (0, len(body) // 2, len(body) - 100):
        check_same(body, [body[:cut], body[cut:]], MapperSettings())


def _variants(pieces: list[bytes], position: int) -> dict[str, list[bytes]]:
    piece = pieces[position]
    lines = piece.split(b"\n")
    cut = [line[: max(6, len(line) // 2)] if line.startswith(b"data:") else line for line in lines]
    garbage = [b"data: garbage" if line.startswith(b"data:") else line for line in lines]
    return {
        "dropped": pieces[:position] + pieces[position + 1 :],
        "replayed": pieces[: position + 1] + pieces[position:],
        "cut": [*pieces[:position], b"\n".join(cut), *pieces[position + 1 :]],
        "garbage": [*pieces[:position], b"\n".join(garbage), *pieces[position + 1 :]],
        "moved_last": [*pieces[:position], *pieces[position + 1 :], piece],
    }


@pytest.mark.parametrize("name", RECORDINGS)
@pytest.mark.slow
def test_every_event_of_every_recording_damaged(name: str) -> None:
    pieces = split_after(load_stream(name), _EVENT_END)
    for position in range(len(pieces)):
        piece = pieces[position]
        for damaged in _variants(pieces, position).values():
            body = b"".join(damaged)
            for setting in SETTINGS.values():
                check_same(body, [body], setting)
            # And split inside the damaged event, and just after it.
            start = len(b"".join(damaged[:position]))
            for cut in (start + 3, start + len(piece) // 2, start + len(piece)):
                check_same(body, [body[:cut], body[cut:]], MapperSettings())
