"""Anthropic Messages history: the assistant content blocks, one user message of results, the check.

What the Messages API requires, and how each rule is kept:

- The assistant message holds its content blocks in the order they streamed: ``thinking``
  blocks with their ``signature`` exactly as received (the API verifies it, and wants it before
  a ``tool_use`` when thinking is on), ``redacted_thinking`` and server-tool blocks as received,
  text, and ``tool_use`` blocks whose ``input`` is an OBJECT: the parsed arguments when the call
  was valid, the repaired object when repaired, ``{}`` when rejected (the semantics of
  :func:`~toolwire.adapters.history.replay_arguments`).
- The results of a turn's calls are ONE user message whose content starts with one
  ``tool_result`` block per ``tool_use``, in order (``is_error: true`` for every result that is
  not ``ok``): the API refuses a ``tool_use`` without a ``tool_result`` in the very next message,
  a ``tool_result`` that answers nothing there, and text before the results.
- ``tool_use`` ids must match ``^[a-zA-Z0-9_-]+$``: toolwire's id for a repeated provider id
  (``toolu_x~2``) is written with ``_`` for each other character, in the call and its result
  alike, so that they still pair.
"""

from __future__ import annotations

import copy
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
    content_text,
    repair_results_in_next_message,
    repaired_result,
    replay_arguments,
)
from .blocks import TOOL_USE, recorded_content

__all__ = ["AnthropicHistory", "wire_id"]

_NOT_ID_CHARACTER = re.compile(r"[^a-zA-Z0-9_-]")


def wire_id(call_id: str) -> str:
    """``call_id`` as a ``tool_use`` id the API accepts (``~`` and the like become ``_``)."""
    return _NOT_ID_CHARACTER.sub("_", call_id)


def replay_input(call: CallRecord) -> dict[str, Any]:
    """The ``input`` object of ``call`` in history (``replay_arguments`` semantics, as object)."""
    value = msgspec.json.decode(replay_arguments(call))
    return value if isinstance(value, dict) else {}


class AnthropicHistory:
    """The Messages API's history format."""

    __slots__ = ()

    def assistant_messages(self, turn: Turn) -> list[dict[str, Any]]:
        """The one message that replays ``turn`` (see :meth:`assistant_message`)."""
        return [self.assistant_message(turn)]

    def assistant_message(self, turn: Turn) -> dict[str, Any]:
        """``{"role": "assistant", "content": [blocks...]}`` for ``turn``.

        The blocks come from the stream itself (``Turn.provider_content``, see
        :func:`~toolwire.adapters.anthropic.blocks.recorded_content`); a turn without them (built
        by hand) is written from the ``Turn`` alone: its text, then its calls (no thinking
        blocks: without their signatures the API would refuse them).
        """
        recorded = recorded_content(turn)
        calls = {call.call_id: call for call in turn.calls}
        content: list[dict[str, Any]] = []
        written: set[str] = set()
        recorded_text = "".join(b.get("text", "") for b in recorded if b.get("type") == "text")
        # A stage may have rewritten the text: then the turn's text replaces the recorded one.
        text_as_recorded = bool(recorded_text) and recorded_text == turn.text
        text_written = text_as_recorded or not turn.text
        for block in recorded:
            kind = block.get("type")
            if kind == TOOL_USE:
                call = calls.get(block.get("id", ""))
                if call is not None and call.call_id not in written:
                    if not text_written:
                        content.append({"type": "text", "text": turn.text})
                        text_written = True
                    content.append(_tool_use(call, block))
                    written.add(call.call_id)
            elif kind == "text":
                if text_as_recorded:
                    content.append(_copied(block))
                elif not text_written:
                    content.append({"type": "text", "text": turn.text})
                    text_written = True
            else:
                content.append(_copied(block))
        if not text_written:
            content.append({"type": "text", "text": turn.text})
        content.extend(_tool_use(c, None) for c in turn.calls if c.call_id not in written)
        return {"role": "assistant", "content": content}

    def tool_result_messages(self, results: Sequence[ToolResult]) -> list[dict[str, Any]]:
        """One user message whose content is one ``tool_result`` block per result, in order."""
        if not results:
            return []
        blocks: list[dict[str, Any]] = []
        for result in results:
            block: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": wire_id(result.call_id),
                "content": result.content,
            }
            if result.is_error:
                block["is_error"] = True
            blocks.append(block)
        return [{"role": "user", "content": blocks}]

    def repair(self, messages: Sequence[Mapping[str, Any]]) -> HistoryRepair:
        """Every ``tool_use`` whose input is no object written as a rejected call: input ``{}``,
        and its ``tool_result`` (``is_error``) saying what was wrong, the content it had kept
        after it; a call with no result gets one among the next user message's leading
        results, or in a user message of its own."""
        return repair_results_in_next_message(
            messages,
            fix_calls=_fix_tool_uses,
            answer=_answer,
            write_results=self.tool_result_messages,
            note=_note,
        )

    def problems(self, messages: Sequence[Mapping[str, Any]]) -> list[HistoryProblem]:
        """Unanswered ``tool_use``, orphan / misplaced / duplicate results, non-object input."""
        found: list[HistoryProblem] = []
        seen: set[str] = set()
        answered: set[str] = set()
        pending: dict[str, int] = {}
        for position, message in enumerate(messages):
            role = message.get("role")
            content = message.get("content")
            blocks = content if isinstance(content, list) else []
            if role == "user":
                _check_results(blocks, position, seen, answered, pending, found)
            _close_pending(pending, found)
            if role == "assistant":
                for block in blocks:
                    if isinstance(block, Mapping) and block.get("type") == TOOL_USE:
                        _check_tool_use(block, position, seen, pending, found)
        _close_pending(pending, found)
        return found


def _copied(value: Any) -> Any:
    """A recorded block's value, copied so that editing the history leaves the turn as it was;
    the value itself when it nests past Python's recursion limit (``deepcopy`` recurses): it is
    replayed as it came either way."""
    try:
        return copy.deepcopy(value)
    except RecursionError:
        return value


def _tool_use(call: CallRecord, recorded: Mapping[str, Any] | None) -> dict[str, Any]:
    block: dict[str, Any] = {
        "type": TOOL_USE,
        "id": wire_id(call.call_id),
        "name": call.name,
        "input": replay_input(call),
    }
    if recorded is not None:
        for key, value in recorded.items():
            if key not in block:
                block[key] = _copied(value)  # ``caller`` and later fields
    return block


def _check_results(
    blocks: list[Any],
    position: int,
    seen: set[str],
    answered: set[str],
    pending: dict[str, int],
    found: list[HistoryProblem],
) -> None:
    leading = True
    for block in blocks:
        if not (isinstance(block, Mapping) and block.get("type") == "tool_result"):
            leading = False
            continue
        raw_id = block.get("tool_use_id")
        call_id = raw_id if isinstance(raw_id, str) else None
        if call_id is not None and call_id in pending:
            del pending[call_id]
            answered.add(call_id)
            if not leading:
                found.append(
                    HistoryProblem(
                        "result_out_of_place",
                        position,
                        call_id,
                        "a tool_result after other content: tool_result blocks must come first",
                    )
                )
        elif call_id is not None and call_id in answered:
            found.append(
                HistoryProblem("duplicate_result", position, call_id, "a second tool_result")
            )
        elif call_id is not None and call_id in seen:
            found.append(
                HistoryProblem(
                    "result_out_of_place",
                    position,
                    call_id,
                    "a tool_result not in the message right after its tool_use",
                )
            )
        else:
            found.append(
                HistoryProblem(
                    "orphan_result",
                    position,
                    call_id,
                    "a tool_result whose tool_use_id matches no tool_use before it",
                )
            )


def _check_tool_use(
    block: Mapping[str, Any],
    position: int,
    seen: set[str],
    pending: dict[str, int],
    found: list[HistoryProblem],
) -> None:
    call_id = block.get("id")
    if not isinstance(call_id, str) or not call_id:
        found.append(HistoryProblem("unanswered_call", position, None, "a tool_use with no id"))
        return
    if call_id in seen:
        found.append(
            HistoryProblem("duplicate_call_id", position, call_id, "this id was used before")
        )
    seen.add(call_id)
    pending[call_id] = position
    problem = _input_problem(block)
    if problem is not None:
        found.append(HistoryProblem(problem[0], position, call_id, problem[1]))


def _input_problem(block: Mapping[str, Any]) -> tuple[ProblemKind, str] | None:
    return arguments_object_problem(block.get("input"), "a tool_use input")


def broken_calls(
    message: Mapping[str, Any],
) -> Iterator[tuple[dict[str, Any], str, tuple[ProblemKind, str]]]:
    """The ``tool_use`` blocks of an assistant ``message`` that :meth:`AnthropicHistory.repair`
    would rewrite (input no object), with their ids and problems (read only)."""
    content = message.get("content")
    if message.get("role") != "assistant" or not isinstance(content, list):
        return
    for block in content:
        if not isinstance(block, dict) or block.get("type") != TOOL_USE:
            continue
        call_id, problem = block.get("id"), _input_problem(block)
        if isinstance(call_id, str) and call_id and problem is not None:
            yield block, call_id, problem


def _fix_tool_uses(message: dict[str, Any]) -> list[BrokenCall]:
    """Make the input of the assistant ``message``'s broken ``tool_use`` blocks ``{}``."""
    broken: list[BrokenCall] = []
    for block, call_id, problem in list(broken_calls(message)):
        received = block.get("input")
        broken.append(BrokenCall.found(call_id, block.get("name"), problem, received, len(broken)))
        block["input"] = {}
    return broken


def _answer(message: dict[str, Any], broken: list[BrokenCall]) -> list[BrokenCall]:
    """Rewrite the ``tool_result`` blocks of the user ``message`` that answer ``broken``
    calls; add, after its leading results, one for each call it did not answer."""
    content = message.get("content")
    if message.get("role") != "user" or not isinstance(content, list):
        return broken
    waiting = {call.call_id: call for call in broken}
    leading = 0
    for block in content:
        if not (isinstance(block, dict) and block.get("type") == "tool_result"):
            break
        leading += 1
        call = waiting.pop(str(block.get("tool_use_id")), None)
        if call is not None:
            earlier = content_text(block.get("content"))
            note = repaired_result(call.call_id, call.name, call.detail, call.received, earlier)
            block["content"] = note.content
            block["is_error"] = True
    if leading:
        added = AnthropicHistory().tool_result_messages([_note(c) for c in waiting.values()])
        content[leading:leading] = added[0]["content"] if added else []
        return []
    return broken


def _note(call: BrokenCall) -> ToolResult:
    return repaired_result(call.call_id, call.name, call.detail, call.received, None)


def _close_pending(pending: dict[str, int], found: list[HistoryProblem]) -> None:
    for call_id, position in pending.items():
        found.append(
            HistoryProblem(
                "unanswered_call",
                position,
                call_id,
                "a tool_use with no tool_result in the next message",
            )
        )
    pending.clear()
