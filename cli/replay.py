"""``toolwire replay``: run a recorded provider stream through toolwire and show what it found."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import anyio
import msgspec

from ..adapters.registry import provider_names
from ..api import collect
from ..pipeline.turn import CallRecord, Turn
from ..recordings import bundled_names, read_bundled
from .common import UnreadableInput, read_json_file

__all__ = ["add_replay_parser", "turn_json"]

_BUNDLED = "bundled:"


def add_replay_parser(commands: Any) -> None:
    """Register the ``replay`` sub-command."""
    replay = commands.add_parser(
        "replay",
        help="run a recorded provider stream through toolwire and show what it found",
        description=(
            "Read a recorded response body and print its tool calls, text, stop reason and "
            f"truncation evidence. FILE may be {_BUNDLED}NAME for a recording shipped with "
            f"toolwire: {', '.join(bundled_names())}."
        ),
    )
    replay.add_argument("file", metavar="FILE")
    replay.add_argument("--provider", default="openai-chat", choices=provider_names())
    replay.add_argument("--max-tokens", type=_positive_int, default=None, metavar="N")
    replay.add_argument(
        "--tools",
        type=Path,
        default=None,
        metavar="TOOLS_JSON",
        help="a JSON file with the list of tool definitions offered to the model",
    )
    replay.add_argument("--json", action="store_true", help="print one JSON object")
    replay.set_defaults(handler=_replay)


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be a positive integer")
    return value


def _read_source(name: str) -> bytes:
    if name.startswith(_BUNDLED):
        bundled = name[len(_BUNDLED) :]
        try:
            return read_bundled(bundled)
        except KeyError:
            raise UnreadableInput(
                f"no bundled recording {bundled!r}; there are: {', '.join(bundled_names())}"
            ) from None
    try:
        return Path(name).read_bytes()
    except OSError as error:
        raise UnreadableInput(f"cannot read {name}: {error.strerror or error}") from None


def _load_tools(path: Path | None) -> list[Any] | None:
    if path is None:
        return None
    tools: list[Any] = read_json_file(path, list, "a JSON list of tool definitions")
    return tools


def _call_json(call: CallRecord) -> dict[str, Any]:
    verdict = call.verdict
    return {
        "id": call.call_id,
        "name": call.name,
        "index": call.index,
        "arguments_raw": call.arguments_raw,
        "truncated": call.truncated,
        "outcome": call.outcome,
        "arguments": call.arguments,
        "repairs": list(verdict.repairs) if verdict is not None else [],
        "reason": verdict.reason if verdict is not None else None,
    }


def turn_json(turn: Turn) -> dict[str, Any]:
    """The documented ``replay --json`` object."""
    return {
        "text": turn.text,
        "calls": [_call_json(call) for call in turn.calls],
        "stop_reason": turn.stop_reason,
        "finish_raw": turn.finish_raw,
        "truncated": turn.truncated,
        "truncation_evidence": list(turn.truncation_evidence),
        "usage": msgspec.to_builtins(turn.usage) if turn.usage is not None else None,
        "model": turn.model,
        "errors": [error.message for error in turn.errors],
    }


def _print_human(turn: Turn) -> None:
    out = sys.stdout
    out.write(f"model: {turn.model or '(not given)'}\n")
    out.write(f"stop reason: {turn.stop_reason} (provider said: {turn.finish_raw})\n")
    evidence = ", ".join(turn.truncation_evidence) or "none"
    out.write(f"truncated: {'yes' if turn.truncated else 'no'} (evidence: {evidence})\n")
    if turn.text:
        out.write(f"text: {turn.text!r}\n")
    if turn.usage is not None:
        usage = turn.usage
        out.write(f"usage: input {usage.input_tokens}, output {usage.output_tokens}\n")
    out.write(f"tool calls: {len(turn.calls)}\n")
    for call in turn.calls:
        state = "cut off" if call.truncated else "complete"
        out.write(f"  [{call.index}] {call.name} id={call.call_id} ({state}, {call.outcome})\n")
        out.write(f"      raw arguments: {call.arguments_raw}\n")
        if call.verdict is not None and call.verdict.repairs:
            out.write(f"      repairs: {', '.join(call.verdict.repairs)}\n")
        if call.verdict is not None and call.verdict.message:
            message = call.verdict.message.replace("\n", "\n      | ")
            out.write(f"      message to the model:\n      | {message}\n")
    for error in turn.errors:
        out.write(f"provider error ({error.kind}): {error.message}\n")


def _replay(args: argparse.Namespace) -> int:
    body = _read_source(args.file)
    tools = _load_tools(args.tools)
    turn = anyio.run(_collect, body, args.provider, args.max_tokens, tools)
    if turn.errors and not (turn.calls or turn.text or turn.model or turn.finish_raw):
        raise UnreadableInput(
            f"{args.file} is not a readable {args.provider} stream: {turn.errors[0].message}"
        )
    if args.json:
        sys.stdout.write(msgspec.json.encode(turn_json(turn)).decode() + "\n")
    else:
        _print_human(turn)
    return 0


async def _collect(body: bytes, provider: str, max_tokens: int | None, tools: Any) -> Turn:
    return await collect(body, provider, max_tokens=max_tokens, tools=tools)
