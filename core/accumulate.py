"""Turn per-chunk tool-call fragments into started / delta / complete events.

Every provider sends tool calls as fragments ``(index, id, name, arguments)``, and each bends
the rules somewhere. The rules here, each from a real stream:

- ``id: ""`` and ``name: ""`` on continuations mean "absent" (DashScope, vLLM-style servers).
- A known id on an open call is that call again, even with the full header repeated
  (OpenRouter/Kimi sends the header twice with the same id): one call, never two.
- A known id that opens a *second* call (a new header on another provider index, or a header
  after the first call was closed) is a distinct call: it gets its own id, ``<id>~2``, so that
  every call of a turn has one identity and one answer (``provider_id`` keeps the original).
- A new id is a new call, even on an index that is already taken (Ollama gives every parallel
  call ``index: 0``); a fragment with no id follows the latest call on its index, or the latest
  call at all when there is no index (Mistral sends no ``index``).
- ``index`` values are the provider's and may start at 1; events carry toolwire's own ``index``:
  the call's position in the turn, 0, 1, 2...
- No id at all: an id is synthesized once, ``toolwire-<random per stream>-<n>``, used in every
  event about that call and never looked up by id, so it can collide neither with a provider id
  (a provider id equal to one is renamed like any repeated id) nor with another turn's ids.
- Arguments sent as an object are serialized once with msgspec (``arguments_form="object"``).
- A call opening on a *new* provider index closes the calls on other indexes (``next_call``):
  that is how OpenAI streams parallel calls. A fragment for a call that was closed that way is a
  protocol violation: it is reported as a ``ProviderError`` carrying the text, never dropped
  silently, and the closed call is not changed.

Two limits keep a hostile stream from costing more than it should:

- a call whose arguments pass ``max_argument_chars`` is marked ``too_large`` at once: its text
  is no longer buffered (only its first characters, for the message) and no more deltas are
  emitted for it, though its length is still counted;
- when a piece of the stream cannot be read (:meth:`CallAccumulator.lose_pieces`), every call
  that was open then, and every later call that starts without a name (its header may have been
  in the lost piece), is marked ``lost_fragment``: its text may lack any part, so it never runs.

The accumulator never closes a call because its buffer parses: only a structural signal closes a
call (:meth:`close_all` at the finish or end of the stream).
"""

from __future__ import annotations

import secrets
from typing import Any

from .error_budget import ErrorBudget
from .events import (
    ClosedBy,
    CutBy,
    CutFacts,
    Damage,
    Event,
    ProviderError,
    ServerParse,
    ToolCallArgumentsDelta,
    ToolCallComplete,
    ToolCallStarted,
)
from .json_text import json_text, plain_str

__all__ = ["DEFAULT_MAX_ARGUMENT_CHARS", "CallAccumulator", "OpenCall"]

_RAW_CAP = 500
#: The judge's default size limit (1 MiB of UTF-8) in characters: a text within the judge's
#: limit is never cut here, since a character is at least one byte.
DEFAULT_MAX_ARGUMENT_CHARS = 1 << 20
#: How many characters of a ``too_large`` call are kept, for the message to quote.
KEPT_HEAD = 500


class OpenCall:
    """A call being accumulated. Plain mutable state, private to one run."""

    __slots__ = (
        "arguments_form",
        "buffering",
        "call_id",
        "closed",
        "damage",
        "expects_end",
        "id_synthesized",
        "index",
        "name",
        "pieces",
        "provider_id",
        "provider_index",
        "server_parse",
        "size",
    )

    def __init__(
        self,
        call_id: str,
        name: str,
        index: int,
        provider_index: int | None,
        synthesized: bool,
        provider_id: str | None = None,
    ) -> None:
        self.call_id = call_id
        self.name = name
        self.index = index
        self.provider_index = provider_index
        self.id_synthesized = synthesized
        self.provider_id = provider_id
        self.pieces: list[str] = []
        self.size = 0
        self.buffering = True
        self.damage: Damage | None = None
        #: The provider ends this call explicitly: still open at the finish means unfinished.
        self.expects_end = False
        self.arguments_form: Any = "string"
        self.closed = False
        #: The call was read from the error of a server whose tool parser failed on it.
        self.server_parse: ServerParse | None = None

    def arguments(self) -> str:
        """The raw arguments so far, exactly as received (a ``too_large`` call: its head)."""
        pieces = self.pieces
        if len(pieces) == 1:
            return pieces[0]
        joined = "".join(pieces)
        self.pieces = [joined]
        return joined


class CallAccumulator:
    """Per-run state for one stream's tool calls; create one per stream."""

    __slots__ = (
        "_after_loss",
        "_by_id",
        "_by_index",
        "_calls",
        "_errors",
        "_latest",
        "_max_chars",
        "_next_synthetic",
        "_open_indexed",
        "_prefix",
        "_used_ids",
        "emit_deltas",
    )

    def __init__(
        self,
        *,
        emit_deltas: bool = True,
        max_argument_chars: int = DEFAULT_MAX_ARGUMENT_CHARS,
        errors: ErrorBudget | None = None,
    ) -> None:
        self._calls: list[OpenCall] = []
        self._errors = errors or ErrorBudget()
        #: Provider ids only: a synthesized id is never looked up, so a provider id that happens
        #: to equal one can never be merged into a synthesized call.
        self._by_id: dict[str, OpenCall] = {}
        self._by_index: dict[int, OpenCall] = {}
        #: Every id given to a call of this run, provider or synthesized: ids stay unique.
        self._used_ids: set[str] = set()
        #: Open calls that have a provider index: the ones a new index closes. Opening a new
        #: index closes them all, so this stays short and a new call costs O(1), not O(calls).
        self._open_indexed: list[OpenCall] = []
        self._latest: OpenCall | None = None
        self._next_synthetic = 0
        self._after_loss = False
        self._max_chars = max_argument_chars
        # Random per stream: synthesized ids never repeat across the turns of a history.
        self._prefix = f"toolwire-{secrets.token_hex(8)}-"
        #: Emit a ToolCallArgumentsDelta per piece. ``collect`` turns it off when nothing but
        #: the Turn reads the events: the pieces are still accumulated, byte for byte.
        self.emit_deltas = emit_deltas

    @property
    def calls(self) -> list[OpenCall]:
        """Every call of the run, in the order they started."""
        return self._calls

    def open_calls(self) -> list[OpenCall]:
        """Calls not yet closed, in order."""
        return [call for call in self._calls if not call.closed]

    def fragment(
        self,
        out: list[Event],
        *,
        index: int | None,
        call_id: str | None,
        name: str | None,
        arguments: str | dict[str, Any] | list[Any] | None,
    ) -> OpenCall | None:
        """Take one fragment; append the events it causes to ``out``; return its call."""
        call = self._resolve(out, index, call_id or None, name or None)
        if call is None or arguments is None:
            return call
        if isinstance(arguments, str):
            if not arguments:
                return call
            text = arguments
        else:
            text = json_text(arguments)  # a lone surrogate or deep nesting: the judge says so
            call.arguments_form = "object"
        if call.closed:
            self._errors.add(
                out,
                ProviderError(
                    message=(
                        f"arguments for tool call {call.call_id!r} arrived after it was closed by "
                        "the next call; they were not added"
                    ),
                    kind="protocol",
                    raw=text[:_RAW_CAP],
                ),
            )
            return call
        self._append(out, call, text)
        return call

    def continuation(self, out: list[Event], index: int | None, arguments: str) -> bool:
        """The hot path: a fragment with only ``index`` and string arguments, for the latest call.

        Returns False when the fragment is not that simple case; the caller then uses
        :meth:`fragment`, which handles every case.
        """
        call = self._latest
        if call is None or call.closed or call.provider_index != index or index is None:
            return False
        if arguments:
            # _append, inlined: this is the one line run per argument piece of a long call.
            call.size += len(arguments)
            if call.buffering:
                call.pieces.append(arguments)
                if call.size > self._max_chars:
                    self._stop_buffering(call)
                elif self.emit_deltas:
                    out.append(
                        ToolCallArgumentsDelta(
                            call_id=call.call_id, index=call.index, delta=arguments
                        )
                    )
        return True

    def append_to(self, out: list[Event], call: OpenCall, text: str) -> None:
        """Add ``text`` to an open call that the adapter addresses itself (by block or item)."""
        if text and not call.closed:
            self._append(out, call, text)

    def _append(self, out: list[Event], call: OpenCall, text: str) -> None:
        text = plain_str(text)  # (an object source may hand a str subclass)
        call.size += len(text)
        if not call.buffering:
            return
        call.pieces.append(text)
        if call.size > self._max_chars:
            self._stop_buffering(call)
        elif self.emit_deltas:
            out.append(ToolCallArgumentsDelta(call_id=call.call_id, index=call.index, delta=text))

    def _stop_buffering(self, call: OpenCall) -> None:
        """Past the size limit: keep the head for the message, drop the rest, count on."""
        call.pieces = [call.arguments()[:KEPT_HEAD]]
        call.buffering = False
        call.damage = "too_large"

    def lose_pieces(self) -> None:
        """A piece of the stream could not be read: no open or nameless later call may run."""
        self._after_loss = True
        for call in self._calls:
            if not call.closed and call.damage is None:
                call.damage = "lost_fragment"

    def start(
        self,
        out: list[Event],
        *,
        call_id: str | None,
        name: str | None,
        provider_index: int | None = None,
        expects_end: bool = False,
    ) -> OpenCall:
        """Open a call the adapter addresses itself (a content block, an output item).

        ``expects_end``: the provider ends each call explicitly (:meth:`close`); a call still
        open at the finish is then unfinished, whatever its text looks like.
        """
        if call_id is not None and call_id in self._by_id:
            call = self._start(out, provider_index, call_id, name, repeated=True)
        else:
            call = self._start(out, provider_index, call_id, name)
        call.expects_end = expects_end
        return call

    def _resolve(
        self, out: list[Event], index: int | None, call_id: str | None, name: str | None
    ) -> OpenCall | None:
        if call_id is not None:
            known = self._by_id.get(call_id)
            if known is None:
                return self._start(out, index, call_id, name)
            if self._is_second_call(known, index, name):
                return self._start(out, index, call_id, name, repeated=True)
            if name is not None and not known.name:
                known.name = name
            if index is not None:
                self._by_index[index] = known
            self._latest = known
            return known
        if index is not None:
            on_slot = self._by_index.get(index)
            if on_slot is not None:
                self._latest = on_slot
                return on_slot
            return self._start(out, index, None, name)
        latest = self._latest
        if latest is not None and (name is None or name == latest.name):
            return latest
        if name is None:
            self._errors.add(
                out,
                ProviderError(
                    message="a tool-call fragment with no id, index or name and no call open",
                    kind="protocol",
                ),
            )
            return None
        return self._start(out, None, None, name)

    @staticmethod
    def _is_second_call(known: OpenCall, index: int | None, name: str | None) -> bool:
        """A known id opening another call: a header on another index, or after it closed."""
        if known.closed:
            return name is not None
        return (
            index is not None and known.provider_index is not None and index != known.provider_index
        )

    def _start(
        self,
        out: list[Event],
        index: int | None,
        call_id: str | None,
        name: str | None,
        *,
        repeated: bool = False,
    ) -> OpenCall:
        if index is not None and index not in self._by_index:
            # A new slot: OpenAI sends parallel calls one index after another.
            for other in self._open_indexed:
                if not other.closed:
                    self._close(out, other, "next_call", truncated=False)
            self._open_indexed.clear()
        synthesized = call_id is None
        provider_id: str | None = None
        if call_id is None:
            call_id = f"{self._prefix}{self._next_synthetic}"
            self._next_synthetic += 1
        elif repeated or call_id in self._used_ids:
            provider_id = call_id
            call_id = self._unique(call_id)
        elif not call_id.isascii() and _unencodable(call_id):
            # A lone surrogate (an SDK object's id can hold one): no request could carry it
            # back with the call's result, so the call is known by an id of toolwire's.
            provider_id = call_id
            call_id = f"{self._prefix}{self._next_synthetic}"
            self._next_synthetic += 1
        call = OpenCall(call_id, name or "", len(self._calls), index, synthesized, provider_id)
        if self._after_loss and name is None:
            # Its header may have been in the piece that was lost.
            call.damage = "lost_fragment"
        self._calls.append(call)
        self._used_ids.add(call_id)
        if not synthesized:
            self._by_id[provider_id or call_id] = call
        if index is not None:
            self._by_index[index] = call
            self._open_indexed.append(call)
        self._latest = call
        out.append(
            ToolCallStarted(
                call_id=call_id,
                name=call.name,
                index=call.index,
                id_synthesized=synthesized,
                provider_id=provider_id,
            )
        )
        return call

    def _unique(self, provider_id: str) -> str:
        number = 2
        while f"{provider_id}~{number}" in self._used_ids:
            number += 1
        return f"{provider_id}~{number}"

    @property
    def latest(self) -> OpenCall | None:
        """The call the most recent fragment went to: the one being generated last."""
        return self._latest

    def close_all(
        self,
        out: list[Event],
        closed_by: ClosedBy,
        truncated: frozenset[str] = frozenset(),
        cut_by: CutBy = "token_limit",
        cut_facts: CutFacts | None = None,
    ) -> None:
        """Close every open call (finish or end of stream); ids in ``truncated`` are marked cut."""
        for call in self._calls:
            if not call.closed:
                cut = call.call_id in truncated
                self._close(
                    out,
                    call,
                    closed_by,
                    cut,
                    cut_by if cut else None,
                    cut_facts if cut else None,
                )

    def close(self, out: list[Event], call: OpenCall, closed_by: ClosedBy) -> None:
        """Close one call on an explicit per-call end signal (Responses, Anthropic)."""
        if not call.closed:
            self._close(out, call, closed_by, truncated=False)

    def _close(
        self,
        out: list[Event],
        call: OpenCall,
        closed_by: ClosedBy,
        truncated: bool,
        cut_by: CutBy | None = None,
        cut_facts: CutFacts | None = None,
    ) -> None:
        call.closed = True
        raw = call.arguments()
        out.append(
            ToolCallComplete(
                call_id=call.call_id,
                name=call.name,
                index=call.index,
                arguments_raw=raw,
                id_synthesized=call.id_synthesized,
                arguments_form=call.arguments_form,
                closed_by=closed_by,
                truncated=truncated,
                cut_by=cut_by,
                cut_facts=cut_facts,
                damage=call.damage,
                arguments_length=call.size if call.size != len(raw) else None,
                provider_id=call.provider_id,
                server_parse=call.server_parse,
            )
        )


def _unencodable(text: str) -> bool:
    """True when ``text`` holds what UTF-8 cannot encode (a lone surrogate)."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return True
    return False
