"""Responses history: a judged turn as ``input`` items, results as ``function_call_output``.

A Responses turn is not one message but a list of output items, and the next request's ``input``
replays them in their order:

- reasoning items exactly as received (``id``, ``encrypted_content``, ``summary``): the API
  refuses a ``function_call`` whose reasoning item is missing, and a reasoning item with no item
  after it, so a reasoning item that ends the turn (the output was cut during reasoning, as in
  ``incomplete_max_output_tokens_during_reasoning.derived.sse``) is not replayed;
- the assistant text as ``message`` items (their ``id`` and ``phase`` kept: ``phase`` must come
  back for models that mark commentary), one per item when the items hold the turn's text, else
  the turn's text in one message;
- every call as a ``function_call`` item (``call_id``, ``name``, its item ``id`` when known, and
  arguments per :func:`~toolwire.adapters.history.replay_arguments`: byte for byte when valid,
  the repaired object, ``{}`` when rejected), never the raw text of a bad call;
- server-side tool calls (``web_search_call``...) as received;
- each result as ``{"type": "function_call_output", "call_id", "output"}``.

The items other than calls come from the :class:`ResponsesOutputItem` events of the run (see
:mod:`.items`); without them (``toolwire.next_messages`` passes only the ``Turn``), the turn is
replayed from its text and calls alone.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import msgspec

from ...core.errors import HistoryError
from ...core.results import ToolResult
from ...core.turn import CallRecord, Turn
from ..history import (
    BrokenCall,
    HistoryProblem,
    HistoryRepair,
    ProblemKind,
    arguments_text_problem,
    repair_one_result_per_message,
    replay_arguments,
)
from .items import CLIENT_CALL_ITEM, ResponsesOutputItem

__all__ = ["OpenAIResponsesHistory"]

_decode = msgspec.json.decode


def _message(text: str, fields: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """An assistant message item: the output-message form when its item id is known."""
    if fields is None or not isinstance(fields.get("id"), str):
        return {"type": "message", "role": "assistant", "content": text}
    message: dict[str, Any] = {
        "type": "message",
        "id": fields["id"],
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }
    if fields.get("phase") is not None:
        message["phase"] = fields["phase"]
    return message


def _message_text(fields: Mapping[str, Any]) -> str:
    texts: list[str] = []
    for part in fields.get("content") or ():
        if isinstance(part, Mapping):
            value = part.get("refusal") if part.get("type") == "refusal" else part.get("text")
            if isinstance(value, str):
                texts.append(value)
    return "".join(texts)


def _function_call(call: CallRecord, fields: Mapping[str, Any] | None = None) -> dict[str, Any]:
    item: dict[str, Any] = {"type": CLIENT_CALL_ITEM}
    if fields is not None and isinstance(fields.get("id"), str):
        item["id"] = fields["id"]
    item.update(call_id=call.call_id, name=call.name, arguments=replay_arguments(call))
    if fields is not None and fields.get("namespace") is not None:
        item["namespace"] = fields["namespace"]
    return item


def _in_order(items: Sequence[ResponsesOutputItem]) -> list[ResponsesOutputItem]:
    """By output position; an item with no known position (-1) after the others, as it came."""
    ranked = sorted(
        enumerate(items), key=lambda pair: (pair[1].position < 0, pair[1].position, pair[0])
    )
    return [item for _, item in ranked]


def _recorded_items(turn: Turn) -> tuple[ResponsesOutputItem, ...]:
    """The output items the stream of ``turn`` recorded, if it is a Responses turn."""
    try:
        return msgspec.convert(turn.provider_content, tuple[ResponsesOutputItem, ...])
    except msgspec.ValidationError:
        return ()


class OpenAIResponsesHistory:
    """The Responses ``input`` item format."""

    __slots__ = ()

    def assistant_messages(
        self, turn: Turn, items: Sequence[ResponsesOutputItem] = ()
    ) -> list[dict[str, Any]]:
        """Every ``input`` item that replays ``turn``, in output order (see the module doc).

        ``items`` default to the ones the stream recorded (``Turn.provider_content``).
        """
        ordered = _in_order(items or _recorded_items(turn))
        decoded = [(item, _decode(item.item)) for item in ordered]
        messages = [fields for item, fields in decoded if item.item_type == "message"]
        own_texts = "".join(_message_text(fields) for fields in messages) == turn.text
        calls = {call.call_id: call for call in turn.calls}
        placed: set[str] = set()
        out: list[dict[str, Any]] = []
        text_placed = own_texts
        for item, fields in decoded:
            if item.item_type == CLIENT_CALL_ITEM:
                call = calls.get(item.call_id or "")
                if call is not None and call.call_id not in placed:
                    placed.add(call.call_id)
                    out.append(_function_call(call, fields))
            elif item.item_type == "message":
                if own_texts and _message_text(fields):
                    out.append(_message(_message_text(fields), fields))
                elif not text_placed and turn.text:
                    text_placed = True
                    out.append(_message(turn.text, fields))
            else:
                out.append(fields)
        if not text_placed and turn.text:
            first_call = next(
                (n for n, item in enumerate(out) if item.get("type") == CLIENT_CALL_ITEM), len(out)
            )
            out.insert(first_call, _message(turn.text))
        out.extend(_function_call(call) for call in turn.calls if call.call_id not in placed)
        while out and out[-1].get("type") == "reasoning":
            out.pop()  # a reasoning item must be followed by the item it was generated with
        return out

    def assistant_message(self, turn: Turn) -> dict[str, Any]:
        """The turn as ONE item, which is all ``toolwire.next_messages`` can take today.

        A turn of text only or of one call is one item; a turn of several items (text and a
        call, two calls) cannot be one, and :class:`HistoryError` says to use
        :meth:`assistant_messages` instead of sending a history the API would refuse.
        """
        items = self.assistant_messages(turn)
        if len(items) == 1:
            return items[0]
        if not items:
            return _message("")
        raise HistoryError(
            f"this Responses turn is {len(items)} input items (text and calls are separate "
            "items), not one message: use OpenAIResponsesHistory.assistant_messages(turn, "
            "items) and append every item"
        )

    def tool_result_messages(self, results: Sequence[ToolResult]) -> list[dict[str, Any]]:
        """One ``function_call_output`` item per result, in order."""
        return [
            {"type": "function_call_output", "call_id": result.call_id, "output": result.content}
            for result in results
        ]

    def problems(self, messages: Sequence[Mapping[str, Any]]) -> list[HistoryProblem]:
        """Unanswered calls, orphan or duplicate outputs, arguments that do not parse.

        The API refuses a ``function_call`` with no ``function_call_output`` ("No tool output
        found for function call"), and an output whose ``call_id`` no earlier call has.
        """
        found: list[HistoryProblem] = []
        seen: set[str] = set()
        pending: dict[str, int] = {}
        for position, message in enumerate(messages):
            kind = message.get("type")
            if kind == "function_call_output":
                call_id = message.get("call_id")
                if not isinstance(call_id, str) or call_id not in seen:
                    found.append(
                        HistoryProblem(
                            "orphan_result",
                            position,
                            call_id if isinstance(call_id, str) else None,
                            "a function_call_output whose call_id matches no earlier call",
                        )
                    )
                elif call_id not in pending:
                    found.append(
                        HistoryProblem(
                            "duplicate_result", position, call_id, "a second output for this call"
                        )
                    )
                else:
                    del pending[call_id]
            elif kind == CLIENT_CALL_ITEM:
                self._check_call(message, position, seen, pending, found)
        found.extend(
            HistoryProblem(
                "unanswered_call", position, call_id, "a function_call with no output after it"
            )
            for call_id, position in pending.items()
        )
        return found

    @staticmethod
    def _check_call(
        call: Mapping[str, Any],
        position: int,
        seen: set[str],
        pending: dict[str, int],
        found: list[HistoryProblem],
    ) -> None:
        call_id = call.get("call_id")
        if not isinstance(call_id, str):
            found.append(
                HistoryProblem("unanswered_call", position, None, "a function_call with no call_id")
            )
            return
        if call_id in seen:
            found.append(
                HistoryProblem(
                    "duplicate_call_id", position, call_id, "this call_id was used before"
                )
            )
        seen.add(call_id)
        pending[call_id] = position
        problem = arguments_text_problem(call.get("arguments"))
        if problem is not None:
            found.append(HistoryProblem(problem[0], position, call_id, problem[1]))

    def repair(self, messages: Sequence[Mapping[str, Any]]) -> HistoryRepair:
        """Every ``function_call`` whose arguments a server refuses written as a rejected call:
        arguments ``"{}"``, and a ``function_call_output`` that says what was wrong (the output
        it had kept after it; one written after the turn's items when it had none)."""
        return repair_one_result_per_message(
            messages,
            fix_calls=_fix_call,
            result_of=_output_of,
            write_results=self.tool_result_messages,
            calls_share_results=True,
        )


def _output_of(item: Mapping[str, Any]) -> tuple[bool, str | None]:
    call_id = item.get("call_id")
    return item.get("type") == "function_call_output", call_id if isinstance(call_id, str) else None


def broken_calls(item: Mapping[str, Any]) -> Iterator[tuple[str, tuple[ProblemKind, str]]]:
    """The call of a ``function_call`` item that :meth:`OpenAIResponsesHistory.repair` would
    rewrite, as (call id, problem); nothing for any other item (read only)."""
    call_id = item.get("call_id")
    if item.get("type") != CLIENT_CALL_ITEM or not isinstance(call_id, str):
        return
    problem = arguments_text_problem(item.get("arguments"))
    if problem is not None:
        yield call_id, problem


def _fix_call(item: dict[str, Any]) -> list[BrokenCall]:
    """Make a broken ``function_call`` item's arguments ``"{}"``; return it (or nothing)."""
    found = next(broken_calls(item), None)
    if found is None:
        return []
    call_id, problem = found
    arguments = item.get("arguments")
    item["arguments"] = "{}"
    return [BrokenCall.found(call_id, item.get("name"), problem, arguments, 0)]
