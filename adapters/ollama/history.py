"""Ollama's native chat history: the assistant turn, ``role: tool`` results, and the check.

What the server reads (ollama/ollama ``api/types.go`` ``Message``, ``ToolCall``):

- ``tool_calls[].function.arguments`` must be a JSON OBJECT: the server unmarshals it into an
  ordered map, and a string (Chat Completions style) is refused with HTTP 400. Arguments follow
  :func:`~toolwire.adapters.history.replay_arguments`: a valid call's own text parsed, a
  repaired call's repaired object, ``{}`` for a rejected one;
- ``tool_calls[].id`` and a result's ``tool_call_id`` exist since v0.12.10; older servers
  ignore them (Go's decoder skips unknown fields). Only ids Ollama gave are written back: a
  synthesized ``toolwire-...`` id was never seen by the model, and renderers print ids into
  the prompt (cohere's falls back to the raw ``tool_call_id``);
- a result names its tool in ``tool_name`` (since v0.9.6; gemma4 and glimmer's renderers
  read it first, ``tool_call_id`` second), and renderers pair results with calls in order;
- ``thinking`` on an assistant message is read by the renderers of thinking models (glm46,
  deepseek3, gemma4...) and by templates (``.Thinking``): it is sent when there was some.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import msgspec

from ...core.results import ToolResult
from ...core.turn import CallRecord, Turn
from ..history import (
    BrokenCall,
    HistoryProblem,
    HistoryRepair,
    ProblemKind,
    arguments_object_problem,
    broken_function_calls,
    fix_function_calls,
    repair_one_result_per_message,
    replay_arguments,
)

__all__ = ["OllamaHistory"]

#: The shape of an id toolwire made up (``core/accumulate.py``: ``toolwire-<16 hex>-<n>``).
#: A ``ToolResult`` does not say whether its call's id was synthesized, so this tells.
_SYNTHESIZED_ID = re.compile(r"toolwire-[0-9a-f]{16}-[0-9]+")


#: A call waiting for its result: its id (if written), its tool's name, its message's position.
_Pending = tuple[str | None, str | None, int]


def _synthesized(call_id: str) -> bool:
    return _SYNTHESIZED_ID.fullmatch(call_id) is not None


def _arguments_object(call: CallRecord) -> dict[str, Any]:
    """The replayed arguments as the object Ollama needs (``{}`` if they are no object)."""
    try:
        decoded = msgspec.json.decode(replay_arguments(call))
    except msgspec.DecodeError:
        # Only a text the judge accepted but msgspec cannot read (``NaN``): its parsed object.
        decoded = call.verdict.arguments if call.verdict is not None else None
    return decoded if isinstance(decoded, dict) else {}


class OllamaHistory:
    """The ``/api/chat`` message format: object arguments, ``tool_name`` on every result."""

    __slots__ = ()

    def assistant_messages(self, turn: Turn) -> list[dict[str, Any]]:
        """The one message that replays ``turn`` (see :meth:`assistant_message`)."""
        return [self.assistant_message(turn)]

    def assistant_message(self, turn: Turn) -> dict[str, Any]:
        """``{"role": "assistant", "content": ..., "tool_calls": [...]}`` for ``turn``."""
        message: dict[str, Any] = {"role": "assistant", "content": turn.text}
        if turn.reasoning:
            message["thinking"] = turn.reasoning
        if turn.calls:
            message["tool_calls"] = [self._call(call) for call in turn.calls]
        return message

    @staticmethod
    def _call(call: CallRecord) -> dict[str, Any]:
        written: dict[str, Any] = {
            "function": {"name": call.name, "arguments": _arguments_object(call)}
        }
        if not call.id_synthesized:
            written["id"] = call.call_id
        return written

    def tool_result_messages(self, results: Sequence[ToolResult]) -> list[dict[str, Any]]:
        """One ``role: tool`` message per result, in order, naming its tool."""
        messages: list[dict[str, Any]] = []
        for result in results:
            message: dict[str, Any] = {
                "role": "tool",
                "content": result.content,
                "tool_name": result.name,
            }
            if not _synthesized(result.call_id):
                message["tool_call_id"] = result.call_id
            messages.append(message)
        return messages

    def repair(self, messages: Sequence[Mapping[str, Any]]) -> HistoryRepair:
        """Every call whose arguments Ollama refuses (not an object) written as a rejected call:
        arguments ``{}``, and a ``role: tool`` result that says what was wrong (the result it
        had kept after it; results with no id are paired with the calls in order)."""
        return repair_one_result_per_message(
            messages,
            fix_calls=_fix_calls,
            result_of=_result_of,
            write_results=self._written_results,
        )

    def _written_results(self, results: Sequence[ToolResult]) -> list[dict[str, Any]]:
        """Results as :meth:`tool_result_messages` writes them, with no id for a call that had
        none."""
        messages = self.tool_result_messages(results)
        for message in messages:
            if message.get("tool_call_id") == "":
                del message["tool_call_id"]
        return messages

    def problems(self, messages: Sequence[Mapping[str, Any]]) -> list[HistoryProblem]:
        """Unanswered calls, results out of order or of no call, ids reused, non-object arguments.

        Results are paired with the calls of the assistant message before them in order, one
        ``role: tool`` message per call, before any other message. A ``tool_call_id`` picks its
        call when both carry ids (a later call first: out of place; one that names no waiting
        call: an orphan); otherwise the next call is answered, and a ``tool_name`` that is not
        its tool is a result out of place. ``arguments`` must be an object when present.
        """
        found: list[HistoryProblem] = []
        seen_ids: set[str] = set()
        #: The calls of the last assistant message still waiting for a result.
        pending: list[_Pending] = []
        answered: set[str] = set()
        for position, message in enumerate(messages):
            role = message.get("role")
            if role == "tool":
                self._check_result(message, position, pending, answered, found)
                continue
            _close_pending(pending, found)
            if role == "assistant":
                for call in message.get("tool_calls") or ():
                    pending.append(_check_call(call, position, seen_ids, found))
        _close_pending(pending, found)
        return found

    @staticmethod
    def _check_result(
        message: Mapping[str, Any],
        position: int,
        pending: list[_Pending],
        answered: set[str],
        found: list[HistoryProblem],
    ) -> None:
        call_id = message.get("tool_call_id")
        call_id = call_id if isinstance(call_id, str) and call_id else None
        ids = [entry[0] for entry in pending]
        if call_id is not None and call_id in ids:
            at = ids.index(call_id)
            if at:
                found.append(
                    HistoryProblem(
                        "result_out_of_place",
                        position,
                        call_id,
                        "this result answers a later call before the calls written before it: "
                        "results must follow their calls in order",
                    )
                )
        elif call_id is not None and call_id in answered:
            found.append(
                HistoryProblem(
                    "duplicate_result", position, call_id, "a second result for this call"
                )
            )
            return
        elif not pending or (call_id is not None and pending[0][0] is not None):
            found.append(
                HistoryProblem(
                    "orphan_result",
                    position,
                    call_id,
                    "a tool result that answers no call waiting for one before it",
                )
            )
            return
        else:
            at = 0  # paired by order: the call has no id to check (or the result names none)
        expected_id, expected_name, _ = pending.pop(at)
        if expected_id is not None:
            answered.add(expected_id)
        tool_name = message.get("tool_name")
        if isinstance(tool_name, str) and tool_name and tool_name != expected_name:
            found.append(
                HistoryProblem(
                    "result_out_of_place",
                    position,
                    call_id or expected_id,
                    f"this result's tool_name {tool_name!r} is not the tool of the call it "
                    f"answers ({expected_name!r}): results must follow their calls in order",
                )
            )


def _check_call(
    call: Any, position: int, seen_ids: set[str], found: list[HistoryProblem]
) -> _Pending:
    """Check one written call; return what its result must match."""
    call_id = call.get("id") if isinstance(call, Mapping) else None
    call_id = call_id if isinstance(call_id, str) and call_id else None
    if call_id is not None:
        if call_id in seen_ids:
            found.append(
                HistoryProblem(
                    "duplicate_call_id", position, call_id, "this call id was used before"
                )
            )
        seen_ids.add(call_id)
    function = call.get("function") if isinstance(call, Mapping) else None
    if not isinstance(function, Mapping):
        found.append(
            HistoryProblem(
                "arguments_not_object", position, call_id, "a tool call with no function object"
            )
        )
        return call_id, None, position
    name = function.get("name")
    problem = _arguments_problem(function)
    if problem is not None:
        found.append(HistoryProblem(problem[0], position, call_id, problem[1]))
    return call_id, name if isinstance(name, str) else None, position


def _arguments_problem(function: Mapping[str, Any]) -> tuple[ProblemKind, str] | None:
    """Ollama decodes arguments into an ordered map: a JSON string is refused (HTTP 400)."""
    if "arguments" not in function:
        return None
    return arguments_object_problem(function["arguments"], "arguments (for Ollama)")


def broken_calls(message: Mapping[str, Any]) -> Iterator[object]:
    """The calls of ``message`` that :meth:`OllamaHistory.repair` would rewrite (read only)."""
    return broken_function_calls(message, _arguments_problem)


def _fix_calls(message: dict[str, Any]) -> list[BrokenCall]:
    """Make the arguments of the assistant ``message``'s broken calls ``{}``; return them."""
    return fix_function_calls(message, _arguments_problem, dict)


def _result_of(message: Mapping[str, Any]) -> tuple[bool, str | None]:
    call_id = message.get("tool_call_id")
    return message.get("role") == "tool", call_id if isinstance(call_id, str) and call_id else None


def _close_pending(pending: list[_Pending], found: list[HistoryProblem]) -> None:
    for call_id, name, position in pending:
        found.append(
            HistoryProblem(
                "unanswered_call",
                position,
                call_id,
                f"a call of {name!r} with no tool result right after its message",
            )
        )
    pending.clear()
