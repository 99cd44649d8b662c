"""Judging a call read from a server's tool-parser error: named, read, judged, and said so.

The adapter turns a known tool-parser failure into a call marked
:class:`~toolwire.core.events.ServerParse` (:mod:`toolwire.core.parser_errors`); its
``arguments_raw`` is what the error quoted. Here, inside the judge stage, that call is:

- **named**: as the error named it; an error about a call that names no tool (Ollama's harmony
  error quotes only the arguments) names the one tool offered when exactly one was (an error
  about the whole output, llama.cpp's ``does not match the expected peg-native format``, names
  no call, so none is assumed), else nothing is made up:
  the call is rejected, and the model must send it again whole, name and all (a quote of the
  output is named by what its reader reads in it);
- **read**: quoted ``arguments`` are judged like any call's, but without the ``prose`` repair
  (text after the object is not prose around a call: the server's parser saw it as part of the
  arguments, so ``{...}]`` has two readings); quoted ``output`` (llama-server's tail, in the
  model's own markup) is read by the user's quoted-output readers
  (:func:`use_quoted_output_reader`), then by the built-in one, every text-call family of
  ``stages/text_calls`` (:func:`~toolwire.stages.text_calls.quoted.read_quoted_output`); each
  call it holds is judged alone; when no reader reads a call in it, nothing runs;
- **judged**: recovered when it has exactly one reading (it runs, like any call), rejected
  otherwise, ``truncated`` when the text or the server said it ended early;
- **said so**: every rejection's message starts with what the server said, so that the model
  learns its call, not the server, was at fault. The reason is the judge's when the quoted text
  was judged (``truncated``, ``not_json``, ``schema``...), ``server_could_not_parse`` when there
  was nothing to judge (nothing quoted, no name, markup no reader read).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence

import msgspec

from ..core.events import Event, ServerParse, ToolCallComplete, ToolCallRejected
from ..core.verdict import Verdict
from ..judge import Policy, Toolset
from ..judge._message import quote_received
from ..judge._transit import damaged_verdict
from .text_calls.quoted import read_quoted_output

__all__ = [
    "QuotedCall",
    "QuotedOutputReader",
    "judge_server_parsed",
    "use_quoted_output_reader",
]


class QuotedCall(msgspec.Struct, frozen=True):
    """One call a quoted-output reader found: its name, its raw arguments, whether it is whole."""

    name: str
    arguments_raw: str
    complete: bool = True


#: Reads the calls in a server's quote of the model's output (``text``), in the model's own
#: markup, given the offered tool names: the calls, in order (an empty list: certainly no
#: call), or ``None`` when this reader does not know the markup.
QuotedOutputReader = Callable[[str, Collection[str]], Sequence[QuotedCall] | None]

_QUOTED_OUTPUT_READERS: list[QuotedOutputReader] = []


def use_quoted_output_reader(reader: QuotedOutputReader) -> None:
    """Read servers' quotes of the model's output with ``reader`` too.

    User readers are tried in the order they were added, all before the built-in one (the
    text-call families, ``stages/text_calls``): a reader is added for markup the built-in one
    reads wrongly or not at all, so it must have the first word; the first that does not answer
    ``None`` decides.
    """
    _QUOTED_OUTPUT_READERS.append(reader)


def _read_quoted_output(text: str, toolset: Toolset | None) -> Sequence[QuotedCall] | None:
    names = toolset.names() if toolset is not None else ()
    for reader in _QUOTED_OUTPUT_READERS:
        found = reader(text, names)
        if found is not None:
            return found
    calls = read_quoted_output(text, toolset)
    if calls is None:
        return None
    return [QuotedCall(call.name, call.arguments, complete=not call.cut) for call in calls]


#: Judges one call's text with a policy (the judge stage's own path, damage aside).
JudgeText = Callable[[ToolCallComplete, Policy], Event]


def judge_server_parsed(
    call: ToolCallComplete,
    toolset: Toolset | None,
    policy: Policy,
    judge_text: JudgeText,
) -> list[Event]:
    """The judged events of one call read from a server's error (see the module docstring)."""
    facts = call.server_parse
    assert facts is not None
    name = call.name
    if (
        not name
        and facts.quoted != "output"
        and facts.about == "tool_call"
        and toolset is not None
        and len(toolset) == 1
    ):
        (name,) = toolset.names()
        call = msgspec.structs.replace(call, name=name)
    said = _server_said(facts, name)
    if call.damage is not None:
        verdict = damaged_verdict(
            tool=name or "?",
            call_id=call.call_id,
            raw=call.arguments_raw,
            damage=call.damage,
            received_length=call.arguments_length or len(call.arguments_raw),
        )
        detail = "the server's error was cut short inside its quote of the call"
        return [_rejected(call, verdict, said, detail)]
    if facts.quoted == "output":
        return _judge_quoted_output(call, toolset, policy, judge_text, said)
    if facts.quoted == "nothing" or not call.arguments_raw:
        return [_nothing_to_judge(call, said, facts)]
    if not name:
        return [_no_name(call, said)]
    judged = judge_text(call, policy.without("prose"))
    return [_with_server_sentence(judged, said)]


def _judge_quoted_output(
    call: ToolCallComplete,
    toolset: Toolset | None,
    policy: Policy,
    judge_text: JudgeText,
    said: str,
) -> list[Event]:
    found = _read_quoted_output(call.arguments_raw, toolset)
    if not found:
        lines = [
            f"{said} It quoted this part of your output, in which no whole call was read, so "
            "nothing was run.",
            quote_received(call.arguments_raw),
            "Send the tool call again, complete, in the tool-call format.",
        ]
        detail = "no quoted-output reader read a call from the server's quote"
        return [_rejection(call, "server_could_not_parse", lines, detail)]
    out: list[Event] = []
    for number, quoted in enumerate(found):
        one = msgspec.structs.replace(
            call,
            call_id=call.call_id if number == 0 else f"{call.call_id}~q{number + 1}",
            name=quoted.name,
            index=call.index + number,
            arguments_raw=quoted.arguments_raw,
            arguments_length=None,
            truncated=call.truncated or not quoted.complete,
            cut_by=call.cut_by or ("unknown" if not quoted.complete else None),
        )
        out.append(_with_server_sentence(judge_text(one, policy.without("prose")), said))
    return out


def _server_said(facts: ServerParse, name: str) -> str:
    if facts.about == "output":
        subject = "your output"  # its words name no call: one may be in it, or not
    else:
        subject = f"your call to `{name}`" if name else "your tool call"
    return (
        f"The server ({facts.server}) could not parse {subject} and answered an error "
        f"instead of it: {facts.error.rstrip('.')}."
    )


def _with_server_sentence(event: Event, said: str) -> Event:
    """A rejection's message with what the server said first; an accepted call unchanged."""
    if not isinstance(event, ToolCallRejected):
        return event
    verdict = event.verdict
    message = f"{said}\n{verdict.message}" if verdict.message else said
    return msgspec.structs.replace(event, verdict=msgspec.structs.replace(verdict, message=message))


def _rejected(call: ToolCallComplete, verdict: Verdict, said: str, detail: str) -> Event:
    message = f"{said}\n{verdict.message}" if verdict.message else said
    verdict = msgspec.structs.replace(verdict, message=message, detail=detail)
    return ToolCallRejected(call=call, verdict=verdict)


def _rejection(
    call: ToolCallComplete, reason: str, lines: list[str], detail: str
) -> ToolCallRejected:
    verdict = Verdict(
        outcome="rejected",
        arguments=None,
        reason=reason,  # type: ignore[arg-type]  # one of RejectReason, from the callers
        message="\n".join(lines),
        detail=detail,
        raw_length=len(call.arguments_raw),
        truncated=call.truncated,
    )
    return ToolCallRejected(call=call, verdict=verdict)


def _nothing_to_judge(call: ToolCallComplete, said: str, facts: ServerParse) -> ToolCallRejected:
    again = f"Call `{call.name}` again" if call.name else "Send the tool call again, name and all,"
    if call.truncated:
        lines = [
            f"{said} Its text ended before the call was complete, so it was not run; why it "
            "ended is not known.",
            f"{again} with the complete arguments; if they are large, send smaller arguments "
            "or split the work into several calls.",
        ]
        return _rejection(call, "truncated", lines, f"{facts.server}: {facts.error}")
    if facts.about == "output":
        lines = [
            f"{said} It quoted none of your output, so no tool call in it was run.",
            "If you meant to call a tool, send the tool call again, name and all, as one tool "
            "call, its arguments one JSON object.",
        ]
    else:
        lines = [
            f"{said} It quoted none of the call, so it was not run.",
            f"{again} as one tool call, its arguments one JSON object.",
        ]
    return _rejection(call, "server_could_not_parse", lines, f"{facts.server}: {facts.error}")


def _no_name(call: ToolCallComplete, said: str) -> ToolCallRejected:
    lines = [
        f"{said} Its error quoted only the arguments, not which tool they were for, and more "
        "than one tool is offered, so it was not run.",
        quote_received(call.arguments_raw),
        "Send the whole tool call again, with the tool's name and its arguments as one JSON "
        "object.",
    ]
    reason = "truncated" if call.truncated else "server_could_not_parse"
    return _rejection(call, reason, lines, "the server's error names no tool")
