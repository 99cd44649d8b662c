"""One adapter's sans-I/O mapper driven over reads: the shared half of every property test.

Each adapter's ``test_*properties.py`` states the same promises about its bodies: any
re-chunking gives the same events (byte by byte too), a cut body re-chunked gives the events of
the cut body, and no prefix of a body is ever taken for the whole. The mapper is driven directly
(no event loop), as ``collect`` drives it per read, so hypothesis can try many splits quickly.

What differs per provider is a :class:`MapperDriver` (how a mapper is opened and fed, whether the
turn is judged, whether ids are synthesized) and each file's ``check_cut``: what a prefix of
that provider's body may and may not show.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from _toolwire_testdata import examples, load_stream
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from toolwire.core.events import Event, ToolCallComplete, encode_event
from toolwire.core.mapper import ProviderMapper
from toolwire.core.turn import Turn, TurnBuilder
from toolwire.stages.judge import JudgeStage

#: The random part of a synthesized id (``core/accumulate.py``: ``toolwire-<16 hex>-<n>``).
_SYNTHESIZED = re.compile(rb"toolwire-[0-9a-f]{16}-")
_JUDGE = JudgeStage()


def property_settings(max_examples: int) -> settings:
    """Hypothesis settings for a property over whole recordings (some are slow to replay); the
    quick loop runs a share of ``max_examples`` (``examples``), the full suite all of them."""
    return settings(
        max_examples=examples(max_examples),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
    )


def split_at(body: bytes, cuts: list[int]) -> list[bytes]:
    """``body`` in reads that end at each of ``cuts`` (in any order, repeats allowed)."""
    pieces, start = [], 0
    for point in [*sorted(set(cuts)), len(body)]:
        pieces.append(body[start:point])
        start = point
    return pieces


def split_after(body: bytes, separator: re.Pattern[bytes]) -> list[bytes]:
    """``body`` in pieces that each end with a match of ``separator`` (the last one may not)."""
    pieces, start = [], 0
    for match in separator.finditer(body):
        pieces.append(body[start : match.end()])
        start = match.end()
    if start < len(body):
        pieces.append(body[start:])
    return pieces


def normalized(events: list[Event]) -> list[bytes]:
    """Events as JSON, the random part of each synthesized id named by its first use.

    Synthesized ids are random per stream, so two runs of one body differ there and only there.
    """
    names: dict[bytes, bytes] = {}

    def rename(match: re.Match[bytes]) -> bytes:
        return names.setdefault(match.group(), b"toolwire-stream%d-" % len(names))

    return [_SYNTHESIZED.sub(rename, encode_event(event)) for event in events]


def encoded(events: list[Event]) -> list[bytes]:
    """Events as JSON, byte for byte."""
    return [encode_event(event) for event in events]


@dataclass(frozen=True, eq=False)
class MapperDriver:
    """How one provider's property tests read a body, and the properties every provider keeps."""

    open_mapper: Callable[[], ProviderMapper]
    #: The body of a named recording (or hand-built body).
    body_of: Callable[[str], bytes] = load_stream
    #: Stop feeding once the mapper saw the provider's end marker, as the runner stops reading.
    stop_when_done: bool = False
    #: Build turns with the default judge's verdict on every complete call.
    judged: bool = False
    #: The provider may send no ids: compare events with synthesized ids named by first use.
    synthesizes_ids: bool = False
    _whole: dict[str, tuple[list[bytes], Turn]] = field(default_factory=dict, repr=False)

    def run(self, reads: list[bytes]) -> list[Event]:
        """Every event of one stream fed ``reads``, then finished."""
        mapper = self.open_mapper()
        events: list[Event] = []
        for read in reads:
            events.extend(mapper.feed_bytes(read))
            if self.stop_when_done and mapper.done:
                break
        events.extend(mapper.finish())
        return events

    def comparable(self, events: list[Event]) -> list[bytes]:
        """``events`` as bytes that two runs of the same body must agree on."""
        return normalized(events) if self.synthesizes_ids else encoded(events)

    def turn_of(self, events: list[Event]) -> Turn:
        builder = TurnBuilder()
        for event in events:
            if self.judged and isinstance(event, ToolCallComplete):
                builder.add(_JUDGE.judge(event))
            else:
                builder.add(event)
        return builder.build()

    def whole(self, name: str) -> tuple[list[bytes], Turn]:
        """The comparable events and the turn of the whole body in one read (computed once)."""
        if name not in self._whole:
            events = self.run([self.body_of(name)])
            self._whole[name] = (self.comparable(events), self.turn_of(events))
        return self._whole[name]

    def cut_turn(self, name: str, cut: int) -> tuple[Turn, Turn]:
        """The turn of the whole body, and the turn of its first ``cut`` bytes."""
        _, full = self.whole(name)
        return full, self.turn_of(self.run([self.body_of(name)[:cut]]))

    def every_cut(self, name: str) -> range:
        """Every prefix length of the body, 0 and the whole body included."""
        return range(len(self.body_of(name)) + 1)

    # -- the properties ----------------------------------------------------------------------

    def check_any_rechunking(self, name: str, data: st.DataObject, *, max_cuts: int) -> None:
        """Any split of the body into reads gives the events of the body in one read."""
        body = self.body_of(name)
        cuts = data.draw(st.lists(st.integers(min_value=0, max_value=len(body)), max_size=max_cuts))
        assert self.comparable(self.run(split_at(body, cuts))) == self.whole(name)[0]

    def check_byte_by_byte(self, name: str) -> None:
        """One byte per read gives the events of the body in one read."""
        body = self.body_of(name)
        reads = [body[i : i + 1] for i in range(len(body))]
        assert self.comparable(self.run(reads)) == self.whole(name)[0]

    def check_cut_and_rechunked(self, name: str, data: st.DataObject, *, max_cuts: int) -> int:
        """Any split of a prefix gives the events of the prefix in one read; returns the cut."""
        body = self.body_of(name)
        cut = data.draw(st.integers(min_value=0, max_value=len(body)))
        cuts = data.draw(st.lists(st.integers(min_value=0, max_value=cut), max_size=max_cuts))
        expected = self.comparable(self.run([body[:cut]]))
        assert self.comparable(self.run(split_at(body[:cut], cuts))) == expected
        return cut


def check_loss_is_shown(full: Turn, turn: Turn, cut: int, *, lost: bool) -> None:
    """A prefix that ``lost`` part of the turn says it was cut (or failed); so does a cut turn.

    ``lost`` is each provider's own reading of "the prefix holds less than the whole body".
    """
    if lost:
        assert turn.truncated or turn.stop_reason == "error", f"cut at {cut} looks whole: {turn}"
        if turn.truncated:
            assert turn.stop_reason in ("length", "disconnected")
    if full.truncated:
        # A cut of a truncated recording cannot look whole either.
        assert turn.truncated or turn.stop_reason == "error"


def check_cut_calls_are_prefixes(driver: MapperDriver, name: str, cut: int) -> None:
    """For providers that name every call: a prefix shows each call's text cut, never invented.

    A call whose text is shorter than in the whole body must say it was truncated; any text or
    call lost must show on the turn.
    """
    full, turn = driver.cut_turn(name, cut)
    original = {call.call_id: call.arguments_raw for call in full.calls}
    for call in turn.calls:
        assert call.call_id in original, f"cut at {cut} invented call {call.call_id}"
        whole_raw = original[call.call_id]
        assert whole_raw.startswith(call.arguments_raw), f"cut at {cut}: not a prefix"
        if call.arguments_raw != whole_raw:
            assert call.truncated, f"cut at {cut}: {call.arguments_raw!r} accepted as complete"
    lost = turn.text != full.text or [c.arguments_raw for c in turn.calls] != [
        c.arguments_raw for c in full.calls
    ]
    check_loss_is_shown(full, turn, cut, lost=lost)
