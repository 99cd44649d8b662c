"""Turn per-chunk tool-call fragments into started / delta / complete events.

Every Chat-Completions-style server sends tool calls as fragments ``(index, id, name,
arguments)``, and each bends the rules somewhere. The rules here, each from a real stream:

- ``id: ""`` and ``name: ""`` on continuations mean "absent" (DashScope, vLLM-style servers).
- A known id is that call again, even with the full header repeated (OpenRouter/Kimi sends the
  header twice with the same id): one call, never two.
- A new id is a new call, even on an index that is already taken (Ollama gives every parallel
  call ``index: 0``); a fragment with no id follows the latest call on its index, or the latest
  call at all when there is no index (Mistral sends no ``index``).
- ``index`` values are the provider's and may start at 1; events carry toolwire's own ``index``:
  the call's position in the turn, 0, 1, 2...
- No id at all: a stable id is synthesized once (``toolwire-<run>-<n>``, where ``<run>`` is a
  hash of the response id, or random when there is none),
  used in every event about that call, never reused, and never looked up by id, so a provider
  id equal to it cannot merge two calls.
- Arguments sent as an object are serialized once with msgspec (``arguments_form="object"``).
- A call opening on a *new* provider index closes the calls on other indexes (``next_call``):
  that is how OpenAI streams parallel calls. A fragment for a call that was closed that way is a
  protocol violation: it is reported as a ``ProviderError`` carrying the text, never dropped
  silently, and the closed call is not changed.

The accumulator never closes a call because its buffer parses: only a structural signal closes a
call (:meth:`close_all` at the finish or end of the stream).
"""

from __future__ import annotations

import hashlib
import secrets
from typing import Any

import msgspec

from .events import (
    ClosedBy,
    CutBy,
    Event,
    ProviderError,
    ToolCallArgumentsDelta,
    ToolCallComplete,
    ToolCallStarted,
)

__all__ = ["CallAccumulator", "OpenCall"]

_encode = msgspec.json.encode
_RAW_CAP = 500


class OpenCall:
    """A call being accumulated. Plain mutable state, private to one run."""

    __slots__ = (
        "arguments_form",
        "call_id",
        "closed",
        "id_synthesized",
        "index",
        "name",
        "pieces",
        "provider_index",
    )

    def __init__(
        self, call_id: str, name: str, index: int, provider_index: int | None, synthesized: bool
    ) -> None:
        self.call_id = call_id
        self.name = name
        self.index = index
        self.provider_index = provider_index
        self.id_synthesized = synthesized
        self.pieces: list[str] = []
        self.arguments_form: Any = "string"
        self.closed = False

    def arguments(self) -> str:
        """The raw arguments so far, exactly as received."""
        pieces = self.pieces
        if len(pieces) == 1:
            return pieces[0]
        joined = "".join(pieces)
        self.pieces = [joined]
        return joined


class CallAccumulator:
    """Per-run state for one stream's tool calls; create one per stream."""

    __slots__ = (
        "_by_id",
        "_by_index",
        "_calls",
        "_latest",
        "_next_synthetic",
        "_prefix",
        "emit_deltas",
    )

    def __init__(self, *, emit_deltas: bool = True) -> None:
        self._calls: list[OpenCall] = []
        #: Provider ids only: a synthesized id is never looked up, so a provider id that happens
        #: to equal one can never be merged into a synthesized call.
        self._by_id: dict[str, OpenCall] = {}
        self._by_index: dict[int, OpenCall] = {}
        self._latest: OpenCall | None = None
        self._next_synthetic = 0
        # A per-run part keeps synthesized ids unique across the turns of a history; it comes
        # from the response id when the provider sends one (see seed_ids), so replays agree.
        self._prefix = f"toolwire-{secrets.token_hex(4)}-"
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
    ) -> None:
        """Take one fragment; append the events it causes to ``out``."""
        call = self._resolve(out, index, call_id or None, name or None)
        if call is None:
            return
        if arguments is None:
            return
        if isinstance(arguments, str):
            if not arguments:
                return
            text = arguments
        else:
            text = _encode(arguments).decode()
            call.arguments_form = "object"
        if call.closed:
            out.append(
                ProviderError(
                    message=(
                        f"arguments for tool call {call.call_id!r} arrived after it was closed by "
                        "the next call; they were not added"
                    ),
                    kind="protocol",
                    raw=text[:_RAW_CAP],
                )
            )
            return
        call.pieces.append(text)
        if self.emit_deltas:
            out.append(ToolCallArgumentsDelta(call_id=call.call_id, index=call.index, delta=text))

    def continuation(self, out: list[Event], index: int | None, arguments: str) -> bool:
        """The hot path: a fragment with only ``index`` and string arguments, for the latest call.

        Returns False when the fragment is not that simple case; the caller then uses
        :meth:`fragment`, which handles every case.
        """
        call = self._latest
        if call is None or call.closed or call.provider_index != index or index is None:
            return False
        if arguments:
            call.pieces.append(arguments)
            if self.emit_deltas:
                out.append(
                    ToolCallArgumentsDelta(call_id=call.call_id, index=call.index, delta=arguments)
                )
        return True

    def _resolve(
        self, out: list[Event], index: int | None, call_id: str | None, name: str | None
    ) -> OpenCall | None:
        if call_id is not None:
            known = self._by_id.get(call_id)
            if known is not None:
                if name is not None and not known.name:
                    known.name = name
                if index is not None:
                    self._by_index[index] = known
                self._latest = known
                return known
            return self._start(out, index, call_id, name)
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
            out.append(
                ProviderError(
                    message="a tool-call fragment with no id, index or name and no call open",
                    kind="protocol",
                )
            )
            return None
        return self._start(out, None, None, name)

    def _start(
        self, out: list[Event], index: int | None, call_id: str | None, name: str | None
    ) -> OpenCall:
        if index is not None and index not in self._by_index:
            # A new slot: OpenAI sends parallel calls one index after another.
            for other in self._calls:
                if not other.closed and other.provider_index is not None:
                    self._close(out, other, "next_call", truncated=False)
        synthesized = call_id is None
        if call_id is None:
            call_id = f"{self._prefix}{self._next_synthetic}"
            self._next_synthetic += 1
        call = OpenCall(call_id, name or "", len(self._calls), index, synthesized)
        self._calls.append(call)
        if not synthesized:
            self._by_id[call_id] = call
        if index is not None:
            self._by_index[index] = call
        self._latest = call
        out.append(
            ToolCallStarted(
                call_id=call_id, name=call.name, index=call.index, id_synthesized=synthesized
            )
        )
        return call

    def seed_ids(self, response_id: str) -> None:
        """Derive the synthesized-id prefix from the response id (before any id is made up)."""
        if self._next_synthetic == 0:
            digest = hashlib.blake2b(response_id.encode(), digest_size=4).hexdigest()
            self._prefix = f"toolwire-{digest}-"

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
    ) -> None:
        """Close every open call (finish or end of stream); ids in ``truncated`` are marked cut."""
        for call in self._calls:
            if not call.closed:
                cut = call.call_id in truncated
                self._close(out, call, closed_by, cut, cut_by if cut else None)

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
    ) -> None:
        call.closed = True
        out.append(
            ToolCallComplete(
                call_id=call.call_id,
                name=call.name,
                index=call.index,
                arguments_raw=call.arguments(),
                id_synthesized=call.id_synthesized,
                arguments_form=call.arguments_form,
                closed_by=closed_by,
                truncated=truncated,
                cut_by=cut_by,
            )
        )
