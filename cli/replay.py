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
from ..core.turn import CallRecord, Turn
from ..recordings import bundled_names, bundled_provider, bundled_request, read_bundled
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
    replay.add_argument(
        "--provider",
        default=None,
        choices=provider_names(),
        help="the provider the body came from (default: the bundled recording's, or openai-chat)",
    )
    replay.add_argument(
        "--request",
        type=Path,
        default=None,
        metavar="REQUEST_JSON",
        help=(
            "the request body that was sent: max_tokens, stop sequences, tools and model are "
            "read from it, so that a cut is blamed on the token limit only with evidence "
            "(default for a bundled recording: the request that produced it, when shipped)"
        ),
    )
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
        "message": verdict.message if verdict is not None else None,
        "provider_id": call.provider_id,
    }


def turn_json(turn: Turn, *, tools_given: bool = True) -> dict[str, Any]:
    """The documented ``replay --json`` object."""
    return {
        "text": turn.text,
        "calls": [_call_json(call) for call in turn.calls],
        "stop_reason": turn.stop_reason,
        "finish_raw": turn.finish_raw,
        "truncated": turn.truncated,
        "truncation_evidence": list(turn.truncation_evidence),
        "cut_by": turn.cut_by,
        "usage": msgspec.to_builtins(turn.usage) if turn.usage is not None else None,
        "model": turn.model,
        "provider": turn.provider,
        "errors": [error.message for error in turn.errors],
        "schema_checked": tools_given,
    }


def _shown(text: str) -> str:
    """One line whatever the text holds: JSON string escapes for newlines and controls."""
    return msgspec.json.encode(text).decode()


def _print_human(turn: Turn, *, tools_given: bool) -> None:
    out = sys.stdout
    out.write(f"model: {turn.model or '(not given)'}\n")
    said = (
        f"provider said: {turn.finish_raw}"
        if turn.finish_raw is not None
        else "the provider sent no finish reason"
    )
    out.write(f"stop reason: {turn.stop_reason} ({said})\n")
    evidence = ", ".join(turn.truncation_evidence) or "none"
    cut = f", cut by: {turn.cut_by}" if turn.cut_by else ""
    out.write(f"truncated: {'yes' if turn.truncated else 'no'} (evidence: {evidence}{cut})\n")
    if turn.text:
        out.write(f"text: {_shown(turn.text)}\n")
    if turn.usage is not None:
        usage = turn.usage
        out.write(f"usage: input {usage.input_tokens}, output {usage.output_tokens}\n")
    out.write(f"tool calls: {len(turn.calls)}\n")
    if turn.calls and not tools_given:
        out.write("  (no tools given: the arguments were checked as JSON, not against a schema)\n")
    for call in turn.calls:
        state = "cut off" if call.truncated else "complete"
        out.write(f"  [{call.index}] {call.name} id={call.call_id} ({state}, {call.outcome})\n")
        out.write(f"      raw arguments: {_shown(call.arguments_raw)}\n")
        verdict = call.verdict
        if verdict is not None and verdict.repairs:
            out.write(f"      repairs: {', '.join(verdict.repairs)}\n")
            repaired = msgspec.json.encode(call.arguments).decode()
            out.write(f"      repaired arguments: {repaired}\n")
        if verdict is not None and verdict.message:
            message = verdict.message.replace("\n", "\n      | ")
            out.write(f"      message to the model:\n      | {message}\n")
    for error in turn.errors:
        out.write(f"provider error ({error.kind}): {error.message}\n")


#: Errors that mean the body was no stream of that provider at all: replay exits 1.
_UNREADABLE_KINDS = frozenset({"not_a_stream", "empty_response", "http_status"})


def _replay(args: argparse.Namespace) -> int:
    body = _read_source(args.file)
    tools = _load_tools(args.tools)
    request = _load_request(args.request, args.file)
    provider = args.provider or _default_provider(args.file)
    turn = anyio.run(_collect, body, provider, args.max_tokens, tools, request)
    unreadable = [error for error in turn.errors if error.kind in _UNREADABLE_KINDS]
    if unreadable or (
        turn.errors and not (turn.calls or turn.text or turn.model or turn.finish_raw)
    ):
        first = (unreadable or list(turn.errors))[0]
        raise UnreadableInput(f"{args.file} is not a readable {provider} stream: {first.message}")
    tools_given = tools is not None or bool(request and request.get("tools"))
    if args.json:
        data = turn_json(turn, tools_given=tools_given)
        sys.stdout.write(msgspec.json.encode(data).decode() + "\n")
    else:
        _print_human(turn, tools_given=tools_given)
    return 0


def _default_provider(file: str) -> str:
    if file.startswith(_BUNDLED):
        return bundled_provider(file[len(_BUNDLED) :])
    return "openai-chat"


def _load_request(path: Path | None, file: str) -> dict[str, Any] | None:
    if path is None:
        return _bundled_request(file)
    request: dict[str, Any] = read_json_file(path, dict, "the JSON request body that was sent")
    return request


def _bundled_request(file: str) -> dict[str, Any] | None:
    """The request shipped with a bundled recording (``NAME.request.json``), if there is one."""
    if not file.startswith(_BUNDLED):
        return None
    data = bundled_request(file[len(_BUNDLED) :])
    if data is None:
        return None
    request: dict[str, Any] = msgspec.json.decode(data)
    return request


async def _collect(
    body: bytes,
    provider: str,
    max_tokens: int | None,
    tools: Any,
    request: dict[str, Any] | None,
) -> Turn:
    options: dict[str, Any] = {"tools": tools, "request": request}
    if max_tokens is not None:
        options["max_tokens"] = max_tokens
    return await collect(body, provider, **options)
