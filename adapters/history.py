"""The reverse direction: what to send back to a provider after a judged turn.

Each provider family implements :class:`HistoryFormat`: the assistant message to append (with
arguments every backend accepts), the tool-result messages, and a well-formedness check of a
whole history. The rules every format keeps:

- arguments are replayed byte for byte when the call was valid, as the repaired object
  serialized when repaired, and as an empty object when rejected: llama.cpp answers HTTP 500 and
  vLLM HTTP 400 when the history holds arguments that do not parse, and Ollama's native API needs
  an object. The raw text stays on the ``CallRecord`` for debugging; it is never sent.
- every call id gets exactly one result.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, Protocol

import msgspec

from ..core.results import ToolResult
from ..core.turn import CallRecord, Turn

__all__ = ["HistoryFormat", "HistoryProblem", "ProblemKind", "replay_arguments"]

ProblemKind = Literal[
    "unanswered_call",
    "orphan_result",
    "duplicate_result",
    "duplicate_call_id",
    "arguments_not_json",
    "arguments_not_object",
    "result_out_of_place",
    "result_hidden",
]


class HistoryProblem(msgspec.Struct, frozen=True):
    """One way a history is not well formed, at message ``index``."""

    kind: ProblemKind
    index: int
    call_id: str | None
    detail: str


def replay_arguments(call: CallRecord) -> str:
    """The arguments text to put in history for ``call`` (see the module docstring)."""
    verdict = call.verdict
    if verdict is None or verdict.arguments is None:
        return "{}"
    if verdict.outcome == "ok":
        return call.arguments_raw
    return msgspec.json.encode(verdict.arguments).decode()


class HistoryFormat(Protocol):
    """One provider's way of writing a judged turn and its results back into history."""

    def assistant_messages(self, turn: Turn) -> list[dict[str, Any]]:
        """The message(s) that replay ``turn``, safe to send back to this provider.

        One message for most providers; the Responses API replays a turn as several ``input``
        items (reasoning, message, one per call).
        """
        ...

    def tool_result_messages(self, results: Sequence[ToolResult]) -> list[dict[str, Any]]:
        """The messages that carry ``results`` (one per result, or one holding them all)."""
        ...

    def problems(self, messages: Sequence[Mapping[str, Any]]) -> list[HistoryProblem]:
        """Everything that makes ``messages`` not well formed for this provider (empty: fine)."""
        ...
