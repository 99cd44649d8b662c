"""OpenAI Chat Completions history: the assistant turn, the tool results, and the check."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ...core.results import ToolResult
from ...core.turn import Turn
from ..history import (
    BrokenCall,
    HistoryProblem,
    HistoryRepair,
    ProblemKind,
    arguments_text_problem,
    broken_function_calls,
    fix_function_calls,
    repair_one_result_per_message,
    replay_arguments,
)
from .adapt import result_text
from .profiles import ServerProfile, TextCallsInHistory, ToolResultRole

__all__ = ["OpenAIChatHistory"]


class OpenAIChatHistory:
    """The Chat Completions message format, in the form each server profile accepts.

    ``empty_content`` is what an assistant turn with no text sends as ``content``: ``None``
    (``null``, as OpenAI documents it) by default, ``""`` for servers that refuse ``null``.
    ``result_role`` is how results are sent: ``tool`` messages by default, ``user`` messages
    that name the call for servers whose prompt drops ``role: tool`` messages. Both come from
    the server's profile (llama-cpp-python needs ``""`` and ``user``; see
    :mod:`toolwire.adapters.openai_chat.profiles`). ``text_calls="text"`` writes a turn whose
    calls were recovered from the text with that text as it was, markup included, as
    ``content`` (for templates that render only ``content``; the calls stay in ``tool_calls``).
    """

    __slots__ = ("empty_content", "result_role", "text_calls")

    def __init__(
        self,
        empty_content: str | None = None,
        result_role: ToolResultRole = "tool",
        text_calls: TextCallsInHistory = "structured",
    ) -> None:
        self.empty_content = empty_content
        self.result_role = result_role
        self.text_calls = text_calls

    @classmethod
    def for_profile(cls, profile: ServerProfile) -> OpenAIChatHistory:
        """The history in the form ``profile``'s server accepts."""
        return cls(
            empty_content=profile.empty_assistant_content,
            result_role=profile.tool_result_role,
            text_calls=profile.text_calls_in_history,
        )

    def assistant_messages(self, turn: Turn) -> list[dict[str, Any]]:
        """The one message that replays ``turn`` (see :meth:`assistant_message`)."""
        return [self.assistant_message(turn)]

    def assistant_message(self, turn: Turn) -> dict[str, Any]:
        """``{"role": "assistant", "content": ..., "tool_calls": [...]}`` for ``turn``."""
        text = turn.text
        if self.text_calls == "text" and turn.raw_text is not None:
            text = turn.raw_text  # the markup the model wrote, which the template shows it
        message: dict[str, Any] = {"role": "assistant", "content": text or self.empty_content}
        if turn.calls:
            message["tool_calls"] = [
                {
                    "id": call.call_id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": replay_arguments(call)},
                }
                for call in turn.calls
            ]
        return message

    def tool_result_messages(self, results: Sequence[ToolResult]) -> list[dict[str, Any]]:
        """One message per result, in order: ``role: tool``, or ``role: user`` naming the call.

        A ``user`` result keeps ``tool_call_id`` (llama-cpp-python ignores the key; the history
        check pairs the result with its call by it) and its text says which call it answers,
        because that text is all the model reads.
        """
        if self.result_role == "user":
            return [
                {
                    "role": "user",
                    "tool_call_id": result.call_id,
                    "content": user_result_text(result),
                }
                for result in results
            ]
        return [
            {"role": "tool", "tool_call_id": result.call_id, "content": result.content}
            for result in results
        ]

    def _is_result(self, message: Mapping[str, Any]) -> bool:
        role = message.get("role")
        return role == "tool" or (
            self.result_role == "user" and role == "user" and "tool_call_id" in message
        )

    def problems(self, messages: Sequence[Mapping[str, Any]]) -> list[HistoryProblem]:
        """Unanswered calls, orphan or duplicate results, unparseable or non-object arguments.

        Chat Completions wants the results of an assistant message's calls right after it,
        before the next assistant or user message. With ``result_role="user"``, a ``role: tool``
        message is a problem too (``result_hidden``): the server's prompt drops it.
        """
        found: list[HistoryProblem] = []
        seen_ids: set[str] = set()
        pending: dict[str, int] = {}
        answered: set[str] = set()
        for position, message in enumerate(messages):
            role = message.get("role")
            if self._is_result(message):
                if role == "tool" and self.result_role == "user":
                    found.append(
                        HistoryProblem(
                            "result_hidden",
                            position,
                            _call_id_of(message),
                            "this server drops role: tool messages from the prompt, so the "
                            "model never reads this result; send it as a user message "
                            "(next_messages does)",
                        )
                    )
                call_id = message.get("tool_call_id")
                if not isinstance(call_id, str) or call_id not in seen_ids:
                    found.append(
                        HistoryProblem(
                            "orphan_result",
                            position,
                            call_id if isinstance(call_id, str) else None,
                            "a tool result whose tool_call_id matches no earlier call",
                        )
                    )
                elif call_id in answered:
                    found.append(
                        HistoryProblem(
                            "duplicate_result",
                            position,
                            call_id,
                            "a second result for this call",
                        )
                    )
                elif call_id not in pending:
                    found.append(
                        HistoryProblem(
                            "result_out_of_place",
                            position,
                            call_id,
                            "a tool result after another assistant or user message came between",
                        )
                    )
                else:
                    del pending[call_id]
                    answered.add(call_id)
                continue
            self._close_pending(pending, found)
            if role == "assistant":
                for call in message.get("tool_calls") or ():
                    self._check_call(call, position, seen_ids, pending, found)
        self._close_pending(pending, found)
        return found

    @staticmethod
    def _close_pending(pending: dict[str, int], found: list[HistoryProblem]) -> None:
        for call_id, position in pending.items():
            found.append(
                HistoryProblem(
                    "unanswered_call",
                    position,
                    call_id,
                    "a tool call with no result after it",
                )
            )
        pending.clear()

    @staticmethod
    def _check_call(
        call: Any,
        position: int,
        seen_ids: set[str],
        pending: dict[str, int],
        found: list[HistoryProblem],
    ) -> None:
        call_id = call.get("id") if isinstance(call, Mapping) else None
        if not isinstance(call_id, str):
            found.append(HistoryProblem("unanswered_call", position, None, "a call with no id"))
            return
        if call_id in seen_ids:
            found.append(
                HistoryProblem(
                    "duplicate_call_id",
                    position,
                    call_id,
                    "this call id was used before",
                )
            )
        seen_ids.add(call_id)
        pending[call_id] = position
        function = call.get("function") or {}
        arguments = function.get("arguments") if isinstance(function, Mapping) else None
        problem = arguments_text_problem(arguments)
        if problem is not None:
            found.append(HistoryProblem(problem[0], position, call_id, problem[1]))

    def repair(self, messages: Sequence[Mapping[str, Any]]) -> HistoryRepair:
        """Every call whose arguments a server refuses (not JSON, not an object, markup) written
        as ``next_messages`` writes a rejected call: arguments ``"{}"``, and a result that says
        what was wrong (this profile's result form), the result it had kept after it."""
        return repair_one_result_per_message(
            messages,
            fix_calls=_fix_calls,
            result_of=self._result_of,
            write_results=self.tool_result_messages,
        )

    def _result_of(self, message: Mapping[str, Any]) -> tuple[bool, str | None]:
        return self._is_result(message), _call_id_of(message)


def broken_calls(message: Mapping[str, Any]) -> Iterator[object]:
    """The calls of ``message`` that :meth:`OpenAIChatHistory.repair` would rewrite (read only)."""
    return broken_function_calls(message, _arguments_problem)


def _fix_calls(message: dict[str, Any]) -> list[BrokenCall]:
    """Make the arguments of the assistant ``message``'s broken calls ``"{}"``; return them."""
    return fix_function_calls(message, _arguments_problem, _empty_text)


def _arguments_problem(function: Mapping[str, Any]) -> tuple[ProblemKind, str] | None:
    return arguments_text_problem(function.get("arguments"))


def _empty_text() -> str:
    return "{}"


def _call_id_of(message: Mapping[str, Any]) -> str | None:
    call_id = message.get("tool_call_id")
    return call_id if isinstance(call_id, str) else None


def user_result_text(result: ToolResult) -> str:
    """The text of a result sent as a user message: which call it answers, then the result."""
    return result_text(result.name, result.call_id, result.content)
