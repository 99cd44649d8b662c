"""The text-call stage: calls the server left in the text become the same events as
structured calls, and their markup leaves the visible text.

Per turn: recovery runs only while the server has delivered no structured call. The first
``ToolCallStarted`` from the server ends it for the turn (hosted gpt-5.4 leaked harmony text
*and* sent the call, livekit#1632: reading both would run it twice); text held until then is
released as it was. Recovered calls are emitted just before ``Finish``, once the whole text is
known, so a later structured call can still cancel them; each becomes ``ToolCallStarted``, one
``ToolCallArgumentsDelta`` and ``ToolCallComplete`` with ``origin="text"`` and its family, and
the judge judges it like any call.

Streaming: ordinary text passes at once (a delta with no character that can start a marker is
passed through untouched, the fast path); text that may open a call is held until the readers
can tell. A held stretch is read again each time it has doubled (and at the end), so hostile
text costs linear time; ordinary text behind an opener that turns out to be none is released
at that next reading. Reasoning is never read: not the server's ``reasoning_content``
(``ReasoningDelta``, which this stage passes untouched), nor reasoning left in the text in any
wrapper of ``reasoning.py``; calls drafted there are drafts, and a reasoning closer with no
opener before it makes every call read before it a draft (its markup is text again, put back
just before the closer).

Several calls: every call read counts once, in the order written, each with an id of its own.
Where prose stands between calls, one rule (``docs/text-calls.md``, "Several calls in one
reply"): a block of special tokens counts wherever it stands; the blocks whose markers prose
also uses (``tail_only``) count all together when the reply ends in a block (its end-of-turn
tokens after it allowed), and none of them when it ends in prose; never only the last one.
So once such a block has prose after it, the text from that block on is held to the end.

A cut call (its markup or arguments stop at the end of the output) is ``truncated`` with the
turn's cut evidence and never runs; when the ``Finish`` said nothing was cut, the stage adds
``arguments_unterminated`` with ``cut_by="unknown"``, as the adapters do for a structured
call. When calls were recovered from a turn the server ended with ``stop``, the stop reason
becomes ``tool_calls`` (the raw value is kept), as for servers that say ``stop`` after calls.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import msgspec

from ...core.events import (
    CutBy,
    CutFacts,
    Event,
    Finish,
    TextCallMarkup,
    TextDelta,
    ToolCallArgumentsDelta,
    ToolCallComplete,
    ToolCallStarted,
    Usage,
)
from ...core.stage import EventStep, SyncStage
from ...judge import Toolset
from ._reading import Found, ReadContext, TextCallReader
from ._scanner import FENCE, TEXT, ReaderTable, ScanState, scan
from ._values import inline_refs
from .registry import readers_for

__all__ = ["TextCallStage"]

#: Below this many held characters the held text is read again at every delta.
_EAGER_LIMIT = 256
_LIMIT_CUTS: frozenset[CutBy] = frozenset({"token_limit", "disconnected", "error"})


class TextCallStage(SyncStage):
    """Read calls left in the text by the families given (``None``: every registered one).

    ``tools``: the tools offered (only their names count; their schemas type XML and GLM
    values). With no tools, nothing is recovered. ``max_tokens`` and ``stop_sequences`` are
    the request's, for the message of a cut call.
    """

    def __init__(
        self,
        families: Iterable[str | TextCallReader] | None = None,
        tools: Sequence[Any] | Toolset | None = None,
        *,
        max_tokens: int | None = None,
        stop_sequences: tuple[str, ...] | None = None,
    ) -> None:
        readers = readers_for(families)
        self._set_up(readers, _table_for(readers), tools, max_tokens, stop_sequences)

    def _set_up(
        self,
        readers: tuple[TextCallReader, ...],
        table: ReaderTable | None,
        tools: Sequence[Any] | Toolset | None,
        max_tokens: int | None,
        stop_sequences: tuple[str, ...] | None,
    ) -> None:
        self.readers = readers
        self.table = table
        self.toolset = tools if isinstance(tools, Toolset) or tools is None else Toolset(tools)
        self.max_tokens = max_tokens
        self.stop_sequences = stop_sequences
        names = frozenset(self.toolset.names()) if self.toolset is not None else frozenset()
        self.context = ReadContext(names, False, self._property_schemas)
        #: Each tool's property schemas with their local references inlined, once per tool.
        self._properties: dict[str, Mapping[str, Any]] = {}

    def for_turn(
        self,
        tools: Sequence[Any] | Toolset | None,
        *,
        max_tokens: int | None = None,
        stop_sequences: tuple[str, ...] | None = None,
    ) -> TextCallStage:
        """The same families (compiled once) with one turn's tools and request facts."""
        # Not through ``__init__``: its look-ups of the readers and their table cost more than
        # the rest of a short turn's set-up.
        stage = TextCallStage.__new__(TextCallStage)
        stage._set_up(self.readers, self.table, tools, max_tokens, stop_sequences)
        return stage

    def _property_schemas(self, tool: str) -> Mapping[str, Any]:
        cached = self._properties.get(tool)
        if cached is not None:
            return cached
        spec = self.toolset.get(tool) if self.toolset is not None else None
        root = spec.json_schema if spec is not None else {}
        properties = root.get("properties")
        if not isinstance(properties, Mapping):
            properties = {}
        # pydantic's Optional[Model] is a $ref to $defs: inlined, so that it can type a value.
        inlined = {key: inline_refs(schema, root) for key, schema in properties.items()}
        self._properties[tool] = inlined
        return inlined

    @property
    def active(self) -> bool:
        """Some family is read and some tool is offered: otherwise the stage is a no-op."""
        return self.table is not None and bool(self.context.names)

    def start(self) -> EventStep:
        """The per-run state."""
        return _TextCallStep(self)

    def __repr__(self) -> str:
        families = sorted({reader.family for reader in self.readers})
        return f"TextCallStage({families!r})"


_TABLES: dict[tuple[int, ...], tuple[tuple[TextCallReader, ...], ReaderTable]] = {}


def _table_for(readers: tuple[TextCallReader, ...]) -> ReaderTable | None:
    """The compiled table of ``readers``, compiled once per set of reader objects."""
    if not readers:
        return None
    key = tuple(id(reader) for reader in readers)
    cached = _TABLES.get(key)
    if cached is None or cached[0] != readers:
        if len(_TABLES) > 64:
            _TABLES.clear()
        cached = (readers, ReaderTable(readers))
        _TABLES[key] = cached
    return cached[1]


_WATCHED: frozenset[type[Event]] = frozenset({ToolCallStarted, Finish})


class _TextCallStep:
    __slots__ = (
        "_blocks",
        "_cancelled",
        "_context",
        "_emitted",
        "_fast",
        "_first",
        "_held",
        "_line_start",
        "_next_read",
        "_output_tokens",
        "_pending",
        "_pending_length",
        "_stage",
        "_state",
        "_structured",
        "_table",
    )

    def __init__(self, stage: TextCallStage) -> None:
        self._stage = stage
        self._table = stage.table
        self._context = stage.context
        #: Matches any character that may start a marker: text without one is ordinary.
        self._first = stage.table.starts if stage.table is not None else None
        #: Text not decided yet (everything before it was emitted or is inside a block).
        self._held = ""
        #: Text received since the held text was last read (joined at the next reading).
        self._pending: list[str] = []
        self._pending_length = 0
        self._next_read = 0
        self._state = ScanState()
        #: Nothing is held and the next text needs no look but for marker characters.
        self._fast = False
        self._line_start = True
        #: Characters of visible text emitted so far (where each block's markup stood).
        self._emitted = 0
        #: Blocks found so far, with the markup they took out and its offset in the visible text.
        self._blocks: list[tuple[Found, str, int]] = []
        self._structured = 0
        self._cancelled = not stage.active
        self._output_tokens: int | None = None

    def feed_batch(self, events: list[Event]) -> list[Event]:
        """:meth:`feed` for the events of one read (the runner's fused loop).

        A batch of ordinary text with no marker character in it passes as it is, after one
        search. Once a delta may open a call, the rest of the batch's text is read together
        at the end of the batch (or at its next event of another kind): the same text and
        calls as event by event, released at the same read, in fewer pieces.
        """
        if self._cancelled:
            if ToolCallStarted in map(type, events):
                for event in events:
                    if type(event) is ToolCallStarted:
                        self._structured = max(self._structured, event.index + 1)
            return events
        first = self._first
        if first is None:
            return events
        texts = [event.text for event in events if type(event) is TextDelta]
        if len(texts) == len(events):
            return self._text_batch(events, texts, first)
        if self._fast:
            texts = []
            for event in events:
                kind = type(event)
                if kind is TextDelta:
                    texts.append(event.text)  # type: ignore[attr-defined]
                elif kind in _WATCHED:
                    break
                elif kind is Usage:
                    self.feed(event)
            else:
                joined = "".join(texts)
                if first.search(joined) is None:
                    if joined:
                        self._emitted += len(joined)
                        self._line_start = joined[-1] == "\n"
                    return events
        out: list[Event] = []
        pending = self._pending
        for event in events:
            if type(event) is TextDelta:
                text = event.text
                if self._fast and first.search(text) is None:
                    if text:
                        self._emitted += len(text)
                        self._line_start = text[-1] == "\n"
                    out.append(event)
                    continue
                self._fast = False
                pending.append(text)
                self._pending_length += len(text)
                continue
            if pending:
                out.extend(self._read_when_due())
            out.extend(self.feed(event))
        if pending:
            out.extend(self._read_when_due())
        return out

    def _text_batch(
        self, events: list[Event], texts: list[str], first: re.Pattern[str]
    ) -> list[Event]:
        """:meth:`feed_batch` for a batch of text only (most reads), with C-speed joins.

        In text mode the ordinary text up to the first token the scan would stop at (complete
        inline code is no stop: ``ReaderTable.ordinary_end``) passes at once, the batch as it
        is when that is all of it; the rest is held and read from that token. In a code fence
        the pieces before the first marker character pass as they are and the rest is read
        from the piece that holds it (a fence closes at a line's start). The same text and
        calls as event by event, released at the same read, in fewer pieces."""
        joined = "".join(texts)
        if self._fast:
            marker = first.search(joined)
            at = len(joined) if marker is None else marker.start()
            if at < len(joined) and self._state.mode == TEXT and self._table is not None:
                at = self._table.ordinary_end(joined, at)
            if at == len(joined):
                if joined:
                    self._emitted += at
                    self._line_start = joined[-1] == "\n"
                return events
            passed: list[Event]
            if self._state.mode == TEXT:
                passed = [TextDelta(text=joined[:at])] if at else []
            else:
                count = length = 0
                for text in texts:  # the pieces wholly before the marker character
                    if length + len(text) > at:
                        break
                    length += len(text)
                    count += 1
                passed, at = events[:count], length
            if at:
                self._emitted += at
                self._line_start = joined[at - 1] == "\n"
            self._fast = False
            held = joined[at:]
            self._pending.append(held)
            self._pending_length += len(held)
            return [*passed, *self._read_when_due()]
        self._pending.append(joined)
        self._pending_length += len(joined)
        return self._read_when_due()

    def _read_when_due(self) -> list[Event]:
        if self._pending_length + len(self._held) < self._next_read:
            return []
        return self._read(final=False)

    def feed(self, event: Event) -> Iterable[Event]:
        if type(event) is TextDelta:
            if self._cancelled:
                return (event,)
            return self._text(event)
        if type(event) is ToolCallStarted:
            self._structured = max(self._structured, event.index + 1)
            if not self._cancelled:
                return [*self._cancel(), event]
        elif type(event) is Usage:
            if event.output_tokens is not None:
                self._output_tokens = event.output_tokens
        elif type(event) is Finish and not self._cancelled:
            return self._close(event)
        return (event,)

    def finish(self) -> Iterable[Event]:
        if self._cancelled:
            return ()
        return self._close(None)

    # -- text ------------------------------------------------------------------------------

    def _text(self, event: TextDelta) -> Iterable[Event]:
        text = event.text
        if self._fast and self._first is not None and self._first.search(text) is None:
            if text:
                self._emitted += len(text)
                self._line_start = text[-1] == "\n"
            return (event,)
        self._pending.append(text)
        self._pending_length += len(text)
        if self._pending_length + len(self._held) < self._next_read:
            return ()
        return self._read(final=False)

    def _read(self, final: bool) -> list[Event]:
        table = self._table
        assert table is not None
        held = self._held + "".join(self._pending) if self._pending else self._held
        self._pending.clear()
        self._pending_length = 0
        state = self._state
        if not self._held and state.line_start != self._line_start:
            state = msgspec.structs.replace(state, line_start=self._line_start)
        scanned = scan(table, held, state, self._context.at_final(final))
        out: list[Event] = []
        position = 0
        emitted = self._emitted
        releases = [at for at in scanned.releases if at < scanned.decided]
        for block in scanned.blocks:
            while releases and releases[0] <= block.start:
                position, emitted = self._release(out, held, position, releases.pop(0), emitted)
            if block.start > position:
                out.append(TextDelta(text=held[position : block.start]))
                emitted += block.start - position
            self._blocks.append((block, held[block.start : block.end], emitted))
            position = block.end
        for at in releases:
            position, emitted = self._release(out, held, position, at, emitted)
        if scanned.decided > position:
            out.append(TextDelta(text=held[position : scanned.decided]))
            emitted += scanned.decided - position
        self._emitted = emitted
        self._held = held[scanned.decided :]
        self._state = state = scanned.state
        self._line_start = state.line_start
        rest = len(self._held)
        self._next_read = 2 * rest if rest > _EAGER_LIMIT else 0
        self._fast = not rest and (
            state.mode == FENCE or (state.mode == TEXT and not state.reply_pending)
        )
        return out

    def _release(
        self, out: list[Event], held: str, position: int, at: int, emitted: int
    ) -> tuple[int, int]:
        """A reasoning closer with no opener before it stands at ``held[at]``: every block
        found so far was drafted in reasoning. Its markup is text again, put back just before
        the closer (the text around it may have been released already; any split of the text
        gives the same place)."""
        if at > position:
            out.append(TextDelta(text=held[position:at]))
            emitted += at - position
        if self._blocks:
            markup = "".join(text for _, text, _ in self._blocks)
            out.append(TextDelta(text=markup))
            emitted += len(markup)
            self._blocks = []
        return at, emitted

    def _cancel(self) -> list[Event]:
        """A structured call came: the server parses calls; release everything as it was."""
        self._cancelled = True
        out: list[Event] = [TextDelta(text=markup) for _, markup, _ in self._blocks]
        held = self._held + "".join(self._pending)
        if held:
            out.append(TextDelta(text=held))
        self._held = ""
        self._pending.clear()
        self._blocks = []
        return out

    # -- the end ---------------------------------------------------------------------------

    def _close(self, finish: Finish | None) -> list[Event]:
        pending = self._held or self._pending or self._state.reply_pending
        out = self._read(final=True) if pending else []
        self._cancelled = True
        blocks = self._blocks
        if not blocks:
            return [*out, finish] if finish is not None else out
        self._blocks = []
        calls = self._call_events([block for block, _, _ in blocks], finish)
        truncated_any = any(call.truncated for call in calls if isinstance(call, ToolCallComplete))
        out.append(TextCallMarkup(markup=tuple((at, text) for _, text, at in blocks)))
        out.extend(calls)
        if finish is not None:
            out.append(_finish_with_calls(finish, truncated_any))
        return out

    def _call_events(self, blocks: list[Found], finish: Finish | None) -> list[Event]:
        stage = self._stage
        limit_cut = finish is not None and finish.truncated and finish.cut_by in _LIMIT_CUTS
        cut_by: CutBy = (finish.cut_by if finish is not None else None) or "unknown"
        facts = CutFacts(
            finish_raw=finish.raw if finish is not None else None,
            output_tokens=self._output_tokens,
            max_tokens=stage.max_tokens,
            stop_sequences=stage.stop_sequences,
        )
        prefix = f"toolwire-text-{secrets.token_hex(6)}-"
        index = self._structured
        events: list[Event] = []
        last_block = blocks[-1]
        for block in blocks:
            family = block.family or None
            for position, call in enumerate(block.calls):
                last = block is last_block and position == len(block.calls) - 1
                # The limit (or a drop) cuts the call written last when nothing ended it.
                cut = call.cut or (limit_cut and last and not block.closed)
                call_id = f"{prefix}{index}"
                events.append(
                    ToolCallStarted(
                        call_id=call_id,
                        name=call.name,
                        index=index,
                        id_synthesized=True,
                        origin="text",
                        text_family=family,
                    )
                )
                if call.arguments:
                    events.append(
                        ToolCallArgumentsDelta(call_id=call_id, index=index, delta=call.arguments)
                    )
                events.append(
                    ToolCallComplete(
                        call_id=call_id,
                        name=call.name,
                        index=index,
                        arguments_raw=call.arguments,
                        id_synthesized=True,
                        closed_by="call_end" if block.closed else "finish",
                        truncated=cut,
                        cut_by=cut_by if cut else None,
                        cut_facts=facts if cut else None,
                        # Complete markup whose JSON does not balance: never judged as
                        # arguments, rejected (``_unbalanced``).
                        damage="unbalanced" if call.unbalanced else None,
                        origin="text",
                        text_family=family,
                    )
                )
                index += 1
        return events


def _finish_with_calls(finish: Finish, truncated: bool) -> Finish:
    changes: dict[str, Any] = {}
    if finish.reason == "end_turn":
        changes["reason"] = "tool_calls"
    if truncated and not finish.truncated:
        changes.update(
            truncated=True, evidence=(*finish.evidence, "arguments_unterminated"), cut_by="unknown"
        )
    return msgspec.structs.replace(finish, **changes) if changes else finish
