"""Function-call items of a Responses stream: one toolwire call per ``function_call`` item.

A call opens on ``response.output_item.added`` (its ``call_id``, ``name`` and item ``id``), grows
with ``response.function_call_arguments.delta`` (addressed by ``item_id``, and by
``output_index`` for a server that sends no item id), and is sent whole again by
``response.function_call_arguments.done`` and ``response.output_item.done``. The rules, each
from a real stream:

- The whole value wins when no delta came: LM Studio sends no
  ``function_call_arguments.delta`` at all (``lmstudio_local_reasoning_text_call_no_arg_deltas``),
  so the ``.done`` text is the call's text, emitted as one delta so that the deltas still add up.
- When deltas came, the whole value must agree with them byte for byte. A disagreement is never
  resolved by picking one: it is reported (``protocol``) and the call is marked
  ``lost_fragment``, so it never runs (the model is asked for the complete call again).
- The item's end closes the call (``closed_by="call_end"``) when its status is ``completed``.
  An item that ends ``incomplete`` (the derived ``incomplete_max_output_tokens_mid_function_call``
  recording) stays open: the finish decides how it was cut. At the end of the stream an
  incomplete item never runs: the call being written last is cut by the finish when the output
  was cut (token limit, failure, dropped stream); any other is marked lost.
- The call id is the item's ``call_id`` (what ``function_call_output`` answers); the item ``id``
  (``fc_...``) is kept by the mapper's :class:`ResponsesOutputItem` for replay.
- A delta for an item that never opened, or for a call already closed, is reported with its
  text, never added silently.
"""

from __future__ import annotations

from ...core.accumulate import OpenCall
from ...core.events import Event, ProviderError
from ...core.mapper import cap_text
from ...core.stream_state import StreamState
from .wire import Item

__all__ = ["FunctionCalls"]


class FunctionCalls:
    """The function-call items of one stream, by item id and by output index. Private to a run."""

    __slots__ = ("_by_item", "_by_position", "_incomplete", "_state")

    def __init__(self, state: StreamState) -> None:
        self._state = state
        self._by_item: dict[str, OpenCall] = {}
        #: output_index -> the call there, and its item id (if the item had one).
        self._by_position: dict[int, tuple[OpenCall, str | None]] = {}
        #: Calls whose item said ``status: incomplete``, with the item id.
        self._incomplete: list[tuple[OpenCall, str | None]] = []

    @property
    def by_item(self) -> dict[str, OpenCall]:
        """Item id -> its call, for the mapper's hot path (read only).

        An entry never changes once made: an item id is registered once (a second
        ``output_item.added`` for it is refused, a finished item registers only when
        :meth:`find` knows no call for it), so the call found here is the one :meth:`find`
        gives for that id.
        """
        return self._by_item

    def find(self, item_id: object, position: object) -> OpenCall | None:
        """The call of an item: by its id first, by its ``output_index`` otherwise.

        A position leads to a call only when the ids do not contradict it (one of them unknown):
        an event naming another item never lands in this one.
        """
        if type(item_id) is str:
            call = self._by_item.get(item_id)
            if call is not None:
                return call
        if type(position) is not int:
            return None
        found = self._by_position.get(position)
        if found is None:
            return None
        call, its_id = found
        if type(item_id) is str and its_id is not None:
            return None
        return call

    def added(self, out: list[Event], position: int | None, item: Item) -> OpenCall | None:
        """``response.output_item.added`` of a ``function_call`` item: the call opens."""
        if item.id is not None and item.id in self._by_item:
            self._report(out, f"function call item {item.id!r} was added twice", "")
            return None
        call = self._state.calls.start(out, call_id=item.call_id or None, name=item.name or None)
        self._register(call, position, item)
        if item.arguments:
            self._state.calls.append_to(out, call, item.arguments)
        return call

    def delta(self, out: list[Event], item_id: object, position: object, text: str) -> None:
        """``response.function_call_arguments.delta``: one piece of a call's arguments."""
        call = self.find(item_id, position)
        if call is None:
            self._report(
                out,
                f"arguments for function call item {item_id!r} (output {position!r}), which "
                "never started; they were not added to any call",
                text,
            )
        elif call.closed:
            self._report(
                out,
                f"arguments for tool call {call.call_id!r} arrived after its item was done; "
                "they were not added",
                text,
            )
        else:
            self._state.calls.append_to(out, call, text)

    def whole(self, out: list[Event], call: OpenCall, arguments: str, where: str) -> None:
        """The call's whole arguments (``.done``, the finished item, the final response)."""
        if call.closed or call.damage == "lost_fragment":
            return  # the text was settled at the item's end, or can never be trusted again
        if call.size == 0:
            self._state.calls.append_to(out, call, arguments)
            return
        if call.buffering:
            agrees = call.arguments() == arguments
        else:  # too_large: only the head is kept, the length is counted
            agrees = call.size == len(arguments) and arguments.startswith(call.arguments())
        if agrees:
            return
        self._report(
            out,
            f"the arguments of tool call {call.call_id!r} in {where} ({len(arguments)} "
            f"characters) differ from the {call.size} characters streamed as deltas; the call "
            "never runs",
            arguments,
        )
        if call.damage is None:
            call.damage = "lost_fragment"

    def item_done(self, out: list[Event], position: int | None, item: Item) -> OpenCall:
        """``response.output_item.done`` (or a final-output item never seen): settle the call."""
        call = self.find(item.id, position)
        if call is None:
            # No output_item.added came for it: the finished item is all there is.
            call = self._state.calls.start(
                out, call_id=item.call_id or None, name=item.name or None
            )
            self._register(call, position, item)
        if item.arguments is not None:
            self.whole(out, call, item.arguments, "the finished item")
        if item.status is None or item.status == "completed":
            self._state.calls.close(out, call, "call_end")
        elif item.status == "incomplete" and not call.closed:
            self._incomplete.append((call, item.id))
        return call

    def settle_incomplete(self, out: list[Event], finish_cuts_latest: bool) -> None:
        """At the end: an item the provider called incomplete never runs.

        The call being written last is left to the finish when the finish cuts it anyway (its
        message then says what cut it); any other is marked lost and reported.
        """
        latest = self._state.calls.latest
        for call, item_id in self._incomplete:
            if call.closed or call.damage is not None:
                continue
            if call is latest and finish_cuts_latest:
                continue
            call.damage = "lost_fragment"
            self._report(
                out,
                f"the provider marked function call item {item_id!r} (tool call "
                f"{call.call_id!r}) incomplete; it never runs",
                "",
            )

    def _register(self, call: OpenCall, position: int | None, item: Item) -> None:
        if item.id is not None:
            self._by_item[item.id] = call
        if position is not None:
            self._by_position[position] = (call, item.id)

    def _report(self, out: list[Event], message: str, text: str) -> None:
        self._state.report(out, ProviderError(message=message, kind="protocol", raw=cap_text(text)))
