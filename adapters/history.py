"""The reverse direction: what to send back to a provider after a judged turn.

Each provider family implements :class:`HistoryFormat`: the assistant message to append (with
arguments every backend accepts), the tool-result messages, and a well-formedness check of a
whole history. The rules every format keeps:

- arguments are replayed byte for byte when the call was valid, as the repaired object
  serialized when repaired, and as an empty object when rejected: llama.cpp answers HTTP 500 and
  vLLM HTTP 400 when the history holds arguments that do not parse, and Ollama's native API needs
  an object. The raw text stays on the ``CallRecord`` for debugging; it is never sent.
- every call id gets exactly one result.

A history written by someone else (a client of the proxy, a framework that kept a broken call)
may hold calls whose arguments a server refuses: llama-server (500 ``Failed to parse tool call
arguments as JSON``), vLLM up to 0.28 (400 ``Expecting ',' delimiter``) and Ollama's ``/v1``
(400 ``invalid tool call arguments``) parse every earlier call's arguments, and one bad call
fails every later request. ``problems`` names such calls (``arguments_not_json``,
``arguments_not_object``, ``arguments_markup``: the model's tool-call markup left where the
arguments belong); ``repair`` writes each as ``next_messages`` writes a rejected call: safe
arguments (``{}``), and a result that says what was wrong (the result sent before is kept
after it; a call that had none gets one, where its turn's results are).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Literal, Protocol

import msgspec

from ..core.mapper import cap_text
from ..core.results import ToolResult
from ..core.turn import CallRecord, Turn

__all__ = [
    "REPAIRED_KINDS",
    "BrokenCall",
    "HistoryFormat",
    "HistoryProblem",
    "HistoryRepair",
    "ProblemKind",
    "arguments_object_problem",
    "arguments_text_problem",
    "broken_function_calls",
    "content_text",
    "fix_function_calls",
    "repair_one_result_per_message",
    "repair_results_in_next_message",
    "repaired_result",
    "replay_arguments",
]

ProblemKind = Literal[
    "unanswered_call",
    "orphan_result",
    "duplicate_result",
    "duplicate_call_id",
    "arguments_not_json",
    "arguments_not_object",
    "arguments_markup",
    "result_out_of_place",
    "result_hidden",
]


class HistoryProblem(msgspec.Struct, frozen=True):
    """One way a history is not well formed, at message ``index``."""

    kind: ProblemKind
    index: int
    call_id: str | None
    detail: str


#: The problems :meth:`HistoryFormat.repair` mends: arguments a server refuses to read.
REPAIRED_KINDS: frozenset[ProblemKind] = frozenset(
    {"arguments_not_json", "arguments_not_object", "arguments_markup"}
)


class HistoryRepair(msgspec.Struct, frozen=True):
    """A history with every call whose arguments a server refuses written as a rejected call.

    ``messages`` is the repaired history (new dicts; the input is not changed); ``changes``
    names each call that was rewritten (its problem, as ``problems`` reports it, at its
    message's index in the input). No change: ``messages`` equals the input.
    """

    messages: list[dict[str, Any]]
    changes: tuple[HistoryProblem, ...] = ()


#: The start of the model's own tool-call markup (Hermes/Qwen, Qwen3-Coder XML, Llama, Mistral,
#: harmony and other special tokens) where a call's arguments belong.
_MARKUP = re.compile(
    r"\A\s*(?:</?(?:tool_call|function|parameter|arg_key|tools?)\b|<\||\[TOOL_CALLS\]"
    r"|<function=|<parameter=)"
)


def arguments_text_problem(arguments: object) -> tuple[ProblemKind, str] | None:
    """What a server would refuse in arguments sent as JSON text (Chat, Responses), if anything."""
    if not isinstance(arguments, str):
        return "arguments_not_json", "arguments must be a JSON string"
    try:
        decoded = msgspec.json.decode(arguments)
    except msgspec.DecodeError as error:
        if _MARKUP.match(arguments):
            return "arguments_markup", f"arguments hold tool-call markup, not JSON: {error}"
        return "arguments_not_json", f"arguments do not parse: {error}"
    if not isinstance(decoded, dict):
        return "arguments_not_object", "arguments must be a JSON object"
    return None


def arguments_object_problem(arguments: object, what: str) -> tuple[ProblemKind, str] | None:
    """What a server would refuse in arguments sent as an object (``what``: how it calls them)."""
    if isinstance(arguments, Mapping):
        return None
    if isinstance(arguments, str) and _MARKUP.match(arguments):
        return "arguments_markup", f"{what} holds tool-call markup, not a JSON object"
    return "arguments_not_object", f"{what} must be a JSON object, got {type(arguments).__name__}"


def repaired_result(
    call_id: str, name: str, detail: str, received: object, earlier: str | None
) -> ToolResult:
    """The error result of a call rewritten by a repair: what was wrong, what came, what to do.

    ``earlier`` is the result sent for it before, kept after the note (the tool may have run).
    """
    shown = received if isinstance(received, str) else msgspec.json.encode(received).decode()
    lines = [
        f"Tool call `{name}`{f' (id {call_id})' if call_id else ''} could not be sent back as "
        f"it was: {detail}. Its "
        "arguments are written as {} in this history.",
        f"Received: {cap_text(shown)}",
        f"If it still needs doing, call `{name}` again with its arguments as one JSON object.",
    ]
    if earlier:
        lines.append(f"The result sent for it before: {earlier}")
    return ToolResult(call_id=call_id, name=name, content="\n".join(lines), status="rejected")


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

    def repair(self, messages: Sequence[Mapping[str, Any]]) -> HistoryRepair:
        """``messages`` with every call whose arguments a server refuses written as a rejected
        call (see the module docstring); every other problem is left as it is."""
        ...


class BrokenCall(msgspec.Struct, frozen=True):
    """A call whose arguments a repair rewrote: what the new result must say about it.

    ``ordinal`` is the call's place among the calls of its message (results that carry no id
    are paired by it); ``received`` the arguments as they were.
    """

    call_id: str
    name: str
    kind: ProblemKind
    detail: str
    received: object
    ordinal: int

    @classmethod
    def found(
        cls,
        call_id: object,
        name: object,
        problem: tuple[ProblemKind, str],
        received: object,
        ordinal: int,
    ) -> BrokenCall:
        """The broken call as a history wrote it: an id or a name that is no string is ``""``
        (a result with no id is paired by order)."""
        return cls(
            call_id if isinstance(call_id, str) else "",
            name if isinstance(name, str) else "",
            *problem,
            received,
            ordinal,
        )


def content_text(content: object) -> str | None:
    """A result's content as text (text parts joined), ``None`` when it has none."""
    if content is None:
        return None
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [part.get("text") if isinstance(part, Mapping) else part for part in content]
        return "".join(text for text in texts if isinstance(text, str))
    return msgspec.json.encode(content).decode()


def repair_one_result_per_message(
    messages: Sequence[Mapping[str, Any]],
    *,
    fix_calls: Callable[[dict[str, Any]], list[BrokenCall]],
    result_of: Callable[[Mapping[str, Any]], tuple[bool, str | None]],
    write_results: Callable[[Sequence[ToolResult]], list[dict[str, Any]]],
    calls_share_results: bool = False,
) -> HistoryRepair:
    """:meth:`HistoryFormat.repair` for formats with one message per result (Chat, Responses
    items, Ollama), on a copy: ``fix_calls`` makes each broken call's arguments safe in place
    and returns it; its result is rewritten, or written where its turn's results end when it
    had none.

    ``result_of(message)``: whether a message is a result, and the call id it names (``None``:
    paired with the calls in order). ``calls_share_results``: call messages that follow each
    other share the results after them (Responses ``function_call`` items), instead of each
    ending the results of the one before (Chat assistant messages).
    """
    copied = [copy.deepcopy(dict(message)) for message in messages]
    changes: list[HistoryProblem] = []
    out: list[dict[str, Any]] = []
    waiting: list[BrokenCall] = []
    ordinal = 0  # results read since the calls they answer
    in_calls = False  # the message before was one holding calls (Responses: a call item)

    for position, message in enumerate(copied):
        is_result, call_id = result_of(message)
        if is_result:
            match = next(
                (
                    call
                    for call in waiting
                    if (call.call_id == call_id if call_id is not None else call.ordinal == ordinal)
                ),
                None,
            )
            ordinal += 1
            in_calls = False
            if match is not None:
                waiting.remove(match)
                _rewrite_result(message, write_results([_note(match, message)])[0])
            out.append(message)
            continue
        found = fix_calls(message)
        if not (calls_share_results and in_calls and _holds_calls(message)):
            out.extend(write_results([_note(call, None) for call in waiting]))
            waiting = []
            ordinal = 0
        in_calls = bool(found) or _holds_calls(message)
        changes.extend(HistoryProblem(c.kind, position, c.call_id, c.detail) for c in found)
        waiting.extend(found)
        out.append(message)
    out.extend(write_results([_note(call, None) for call in waiting]))
    if not changes:
        return HistoryRepair([dict(message) for message in messages])
    return HistoryRepair(out, tuple(changes))


def _holds_calls(message: Mapping[str, Any]) -> bool:
    return bool(message.get("tool_calls")) or message.get("type") == "function_call"


def _rewrite_result(message: dict[str, Any], written: Mapping[str, Any]) -> None:
    """Give an existing result message the content of ``written``, keeping its other keys."""
    for key in ("content", "output"):
        if key in written:
            message[key] = written[key]


def _note(call: BrokenCall, result: Mapping[str, Any] | None) -> ToolResult:
    """The repaired result of ``call``, keeping the text of the ``result`` it had, if any."""
    earlier = None
    if result is not None:
        earlier = content_text(result.get("content", result.get("output")))
    return repaired_result(call.call_id, call.name, call.detail, call.received, earlier)


def repair_results_in_next_message(
    messages: Sequence[Mapping[str, Any]],
    *,
    fix_calls: Callable[[dict[str, Any]], list[BrokenCall]],
    answer: Callable[[dict[str, Any], list[BrokenCall]], list[BrokenCall]],
    write_results: Callable[[Sequence[ToolResult]], list[dict[str, Any]]],
    note: Callable[[BrokenCall], ToolResult],
) -> HistoryRepair:
    """:meth:`HistoryFormat.repair` for formats that answer a turn's calls in ONE next message
    (Anthropic, Gemini), on a copy: ``fix_calls`` makes each broken call's arguments safe in
    place and returns it; ``answer`` rewrites the next message's results for them and returns
    those it could not place, which get a message of their own (``note`` writes each)."""
    out: list[dict[str, Any]] = []
    changes: list[HistoryProblem] = []
    waiting: list[BrokenCall] = []
    for position, original in enumerate(messages):
        message = copy.deepcopy(dict(original))
        if waiting:
            out.extend(write_results([note(call) for call in answer(message, waiting)]))
        waiting = fix_calls(message)
        changes.extend(HistoryProblem(c.kind, position, c.call_id, c.detail) for c in waiting)
        out.append(message)
    out.extend(write_results([note(call) for call in waiting]))
    if not changes:
        return HistoryRepair([dict(message) for message in messages])
    return HistoryRepair(out, tuple(changes))


def broken_function_calls(
    message: Mapping[str, Any],
    problem_of: Callable[[Mapping[str, Any]], tuple[ProblemKind, str] | None],
) -> Iterator[tuple[int, dict[str, Any], dict[str, Any], tuple[ProblemKind, str]]]:
    """The calls of an assistant ``message`` with ``tool_calls[].function`` (Chat, Ollama)
    whose function ``problem_of`` finds broken: (ordinal, call, function, problem). Reads only:
    a request whose history yields none goes upstream as it came."""
    if message.get("role") != "assistant":
        return
    calls = message.get("tool_calls")
    if not isinstance(calls, list):
        return
    for ordinal, call in enumerate(calls):
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict):
            continue
        problem = problem_of(function)
        if problem is not None:
            yield ordinal, call, function, problem


def fix_function_calls(
    message: dict[str, Any],
    problem_of: Callable[[Mapping[str, Any]], tuple[ProblemKind, str] | None],
    safe: Callable[[], object],
) -> list[BrokenCall]:
    """In an assistant ``message`` with ``tool_calls[].function`` (Chat, Ollama), replace the
    arguments of each call ``problem_of(function)`` finds broken with ``safe()``; return them.

    A call with no id is kept with ``""`` (Ollama pairs its result by order).
    """
    broken: list[BrokenCall] = []
    for ordinal, call, function, problem in list(broken_function_calls(message, problem_of)):
        received = function.get("arguments")
        broken.append(
            BrokenCall.found(call.get("id"), function.get("name"), problem, received, ordinal)
        )
        function["arguments"] = safe()
    return broken
