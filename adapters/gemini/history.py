"""Gemini history: the model ``Content``, one ``user`` content of function responses, the check.

The model turn is ``{"role": "model", "parts": [...]}`` with its parts in the order they came
and each ``thoughtSignature`` on the part it came with (:mod:`.replay`); each ``functionCall``
has ``args`` as an object with ``replay_arguments`` semantics (valid: the parsed object, as
sent; repaired: the repaired object; rejected: ``{}``) and its ``id`` when the API gave one.

The results are one ``{"role": "user", "parts": [...]}`` content with one ``functionResponse``
per call, in call order, each with the call's ``name`` (and ``id`` when the API gave one) and
``response`` an object: ``{"output": ...}`` for a tool that returned, ``{"error": ...}`` for
every other result, the keys Google documents for ``FunctionResponse.response``.

The call toolwire synthesizes for a ``MALFORMED_FUNCTION_CALL`` finish has no name (the server
sent none); it is written as :data:`MALFORMED_CALL_NAME` on both sides, so that its rejection
reaches the model as the answer to a call, as every call's answer does.

Thought signatures: a model turn whose first function call has no signature (its turn was not
remembered, or the call is the synthesized one) gets Google's documented
:data:`SIGNATURE_SENTINEL` on that part, unless the turn's model is a Gemini 1.x / 2.x, which
never required one: Gemini 3 answers HTTP 400 to a function call without a signature.
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
    content_text,
    repair_results_in_next_message,
    repaired_result,
    replay_arguments,
)
from .replay import ReplayPart, recall

__all__ = ["MALFORMED_CALL_NAME", "SIGNATURE_SENTINEL", "GeminiHistory"]

#: The name written for a call whose name the server never sent (MALFORMED_FUNCTION_CALL).
MALFORMED_CALL_NAME = "malformed_function_call"
#: Google's documented stand-in for a signature the client does not have
#: (https://ai.google.dev/gemini-api/docs/thought-signatures, "skip_thought_signature_validator").
SIGNATURE_SENTINEL = "skip_thought_signature_validator"
_OLDER_MODELS = re.compile(r"(models/)?gemini-[12][.-]")
_SYNTHESIZED = "toolwire-"


def _wire_name(name: str) -> str:
    return name or MALFORMED_CALL_NAME


def _provider_id(call_id: str) -> str | None:
    """The id to write, or ``None`` for one toolwire synthesized (the API never saw it).

    Decided from the id alone, the same way for the call and for its result (a ``ToolResult``
    does not say whether its id was synthesized).
    """
    return None if call_id.startswith(_SYNTHESIZED) else call_id


class GeminiHistory:
    """The Gemini ``contents`` format (Gemini API and Vertex AI)."""

    __slots__ = ()

    def assistant_messages(self, turn: Turn) -> list[dict[str, Any]]:
        """The one message that replays ``turn`` (see :meth:`assistant_message`)."""
        return [self.assistant_message(turn)]

    def assistant_message(self, turn: Turn) -> dict[str, Any]:
        """``{"role": "model", "parts": [...]}`` for ``turn``, signatures on their parts."""
        remembered = recall(turn)
        calls = {call.call_id: call for call in turn.calls}
        parts: list[dict[str, Any]] = []
        written: set[str] = set()
        if remembered is not None:
            for part in remembered:
                if part.kind == "call":
                    call = calls.get(part.call_id or "")
                    if call is not None and call.call_id not in written:
                        written.add(call.call_id)
                        parts.append(_call_part(call, part.signature))
                else:
                    parts.append(_text_part(part))
        elif turn.text:
            parts.append({"text": turn.text})
        for call in turn.calls:
            if call.call_id not in written:
                parts.append(_call_part(call, None))
        _sign_first_call(parts, turn.model)
        return {"role": "model", "parts": parts}

    def tool_result_messages(self, results: Sequence[ToolResult]) -> list[dict[str, Any]]:
        """One ``user`` content holding a ``functionResponse`` per result, in order."""
        if not results:
            return []
        parts: list[dict[str, Any]] = []
        for result in results:
            response: dict[str, Any] = {"name": _wire_name(result.name)}
            provider_id = _provider_id(result.call_id)
            if provider_id is not None:
                response["id"] = provider_id
            key = "output" if result.status == "ok" else "error"
            response["response"] = {key: result.content}
            parts.append({"functionResponse": response})
        return [{"role": "user", "parts": parts}]

    def repair(self, messages: Sequence[Mapping[str, Any]]) -> HistoryRepair:
        """Every ``functionCall`` whose ``args`` is no object written as a rejected call: args
        ``{}``, and its ``functionResponse`` (paired in order, as Gemini pairs them) answering
        ``{"error": ...}`` with what was wrong, the response it had kept after it; a call with
        no response gets one at the end of the next content's responses, or in a content of
        its own."""
        return repair_results_in_next_message(
            messages,
            fix_calls=_fix_calls,
            answer=_answer,
            write_results=self.tool_result_messages,
            note=_unanswered_note,
        )

    def problems(self, messages: Sequence[Mapping[str, Any]]) -> list[HistoryProblem]:
        """What Gemini refuses: each model content's function calls must be answered by the
        next content, one ``functionResponse`` per ``functionCall``, in order, names (and ids,
        when given) matching; ``args`` must be an object; ids must not repeat.
        """
        return _Checker().run(messages)


def _text_part(part: ReplayPart) -> dict[str, Any]:
    written: dict[str, Any] = {"text": part.text}
    if part.kind == "reasoning":
        written["thought"] = True
    if part.signature is not None:
        written["thoughtSignature"] = part.signature
    return written


def _call_part(call: CallRecord, signature: str | None) -> dict[str, Any]:
    function: dict[str, Any] = {
        "name": _wire_name(call.name),
        "args": msgspec.json.decode(replay_arguments(call)),
    }
    provider_id = _provider_id(call.call_id)
    if provider_id is not None:
        function["id"] = provider_id
    part: dict[str, Any] = {"functionCall": function}
    if signature is not None:
        part["thoughtSignature"] = signature
    return part


def _sign_first_call(parts: list[dict[str, Any]], model: str | None) -> None:
    first = next((part for part in parts if "functionCall" in part), None)
    if first is None or "thoughtSignature" in first:
        return
    if model is not None and _OLDER_MODELS.match(model):
        return
    first["thoughtSignature"] = SIGNATURE_SENTINEL


def _function_parts(content: Mapping[str, Any], key: str) -> list[tuple[int, Any]]:
    parts = content.get("parts")
    if not isinstance(parts, list):
        return []
    return [
        (at, part[key])
        for at, part in enumerate(parts)
        if isinstance(part, Mapping) and key in part
    ]


def _field(value: Any, name: str) -> Any:
    return value.get(name) if isinstance(value, Mapping) else None


def _args_problem(call: Any) -> tuple[ProblemKind, str] | None:
    args = _field(call, "args")
    return None if args is None else arguments_object_problem(args, "functionCall.args")


def broken_calls(
    content: Mapping[str, Any],
) -> Iterator[tuple[int, dict[str, Any], tuple[ProblemKind, str]]]:
    """The ``functionCall`` parts of a model ``content`` that :meth:`GeminiHistory.repair`
    would rewrite (``args`` no object): (ordinal among its calls, call, problem); read only."""
    if content.get("role") != "model":
        return
    for ordinal, (_, call) in enumerate(_function_parts(content, "functionCall")):
        problem = _args_problem(call)
        if problem is not None and isinstance(call, dict):
            yield ordinal, call, problem


def _fix_calls(content: dict[str, Any]) -> list[BrokenCall]:
    """Make the ``args`` of the model ``content``'s broken calls ``{}``; return them (a call
    without an id has ``""``: its response is paired by order and written with no id)."""
    broken: list[BrokenCall] = []
    for ordinal, call, problem in list(broken_calls(content)):
        broken.append(
            BrokenCall.found(call.get("id"), call.get("name"), problem, call.get("args"), ordinal)
        )
        call["args"] = {}
    return broken


def _answer(content: dict[str, Any], broken: list[BrokenCall]) -> list[BrokenCall]:
    """Rewrite the responses of ``content`` that answer ``broken`` calls (by order); add one
    at the end of its responses for each it lacks. What could not be placed is returned."""
    responses = [response for _, response in _function_parts(content, "functionResponse")]
    if not responses:
        return broken
    for call in broken:
        if call.ordinal < len(responses) and isinstance(responses[call.ordinal], dict):
            response = responses[call.ordinal]
            earlier = content_text(msgspec.json.encode(response.get("response")).decode())
            response["response"] = {"error": _note(call, earlier).content}
        else:
            written = GeminiHistory().tool_result_messages([_note(call, None)])
            content["parts"].extend(written[0]["parts"])
    return []


def _unanswered_note(call: BrokenCall) -> ToolResult:
    return _note(call, None)


def _note(call: BrokenCall, earlier: str | None) -> ToolResult:
    name = _wire_name(call.name)
    result = repaired_result(call.call_id, name, call.detail, call.received, earlier)
    if call.call_id:
        return result
    # A call with no id: an id of toolwire's form, which the response is written without.
    return msgspec.structs.replace(result, call_id=f"{_SYNTHESIZED}repaired-{call.ordinal}")


class _Checker:
    """One pass over a history; the problems in the order they are met."""

    def __init__(self) -> None:
        self.found: list[HistoryProblem] = []
        self.ids: set[str] = set()
        self.answered: set[str] = set()
        #: (name, id) of the calls waiting for the next content, with the model content's index.
        self.pending: list[tuple[str | None, str | None]] = []
        self.pending_at = 0

    def run(self, messages: Sequence[Mapping[str, Any]]) -> list[HistoryProblem]:
        for position, content in enumerate(messages):
            responses = [r for _, r in _function_parts(content, "functionResponse")]
            if self.pending:
                self._answer(position, responses)
            else:
                for response in responses:
                    self._stray(position, response)
            if content.get("role") == "model":
                self._calls(position, content)
        self._unanswered(0)
        return self.found

    def _calls(self, position: int, content: Mapping[str, Any]) -> None:
        for _, call in _function_parts(content, "functionCall"):
            name, call_id = _field(call, "name"), _field(call, "id")
            if isinstance(call_id, str):
                if call_id in self.ids:
                    self._problem("duplicate_call_id", position, call_id, "this id was used before")
                self.ids.add(call_id)
            problem = _args_problem(call)
            if problem is not None:
                self._problem(problem[0], position, call_id, problem[1])
            self.pending.append((name, call_id if isinstance(call_id, str) else None))
        self.pending_at = position

    def _answer(self, position: int, responses: list[Any]) -> None:
        for at, response in enumerate(responses):
            if at >= len(self.pending):
                self._stray(position, response)
                continue
            name, call_id = self.pending[at]
            got_name, got_id = _field(response, "name"), _field(response, "id")
            if got_name != name or (call_id is not None and got_id != call_id):
                self._problem(
                    "orphan_result",
                    position,
                    got_id if isinstance(got_id, str) else call_id,
                    f"functionResponse {at} answers {got_name!r} (id {got_id!r}), but call {at} "
                    f"of the model turn is {name!r} (id {call_id!r})",
                )
            elif call_id is not None:
                self.answered.add(call_id)
        self._unanswered(len(responses))

    def _stray(self, position: int, response: Any) -> None:
        got_id = _field(response, "id")
        call_id = got_id if isinstance(got_id, str) else None
        if call_id is not None and call_id in self.answered:
            self._problem("duplicate_result", position, call_id, "a second answer to this call")
        elif call_id is not None and call_id in self.ids:
            self._problem(
                "result_out_of_place",
                position,
                call_id,
                "a functionResponse that is not in the content right after its call",
            )
        else:
            self._problem(
                "orphan_result",
                position,
                call_id,
                "a functionResponse with no functionCall right before it",
            )

    def _unanswered(self, answered: int) -> None:
        for name, call_id in self.pending[answered:]:
            self._problem(
                "unanswered_call",
                self.pending_at,
                call_id,
                f"functionCall {name!r} has no functionResponse in the next content",
            )
        self.pending = []

    def _problem(self, kind: ProblemKind, position: int, call_id: str | None, detail: str) -> None:
        self.found.append(HistoryProblem(kind, position, call_id, detail))
