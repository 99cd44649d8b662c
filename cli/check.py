"""``toolwire check``: judge raw arguments from stdin and print verdicts as JSON.

One string (``--tool NAME [--schema FILE] [--strict]``): the whole of stdin is the raw arguments
text, exactly (a trailing newline is JSON whitespace, so ``echo`` works). ``--jsonl``: each line
is ``{"raw": ..., "tool": ..., "schema": ...}`` and one verdict line is written per input line, in
order; a line that cannot be read, or whose schema cannot be used, gets ``{"error": ...}`` in its
place and the exit code is 1.

A schema given with ``--schema`` is compiled before any input is read: one that cannot be used
(not a JSON Schema, a ``$ref`` that points nowhere or to another document, which is never
fetched) is a usage error, one line on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import msgspec

from ..core.errors import ConfigurationError
from ..core.verdict import Verdict
from ..judge import (
    DEFAULT_POLICY,
    STRICT_POLICY,
    Policy,
    SchemaChecker,
    ToolSchema,
    parse_arguments,
)
from .common import read_json_file

__all__ = ["add_check_parser"]

_encode = msgspec.json.Encoder().encode


def add_check_parser(commands: Any) -> None:
    """Register the ``check`` sub-command."""
    check = commands.add_parser(
        "check",
        help="judge raw tool-call arguments read from stdin",
        description=(
            "Read one raw arguments string from stdin (or JSON lines with --jsonl) and print "
            "a JSON verdict: outcome, arguments, repairs, reason, message."
        ),
    )
    check.add_argument("--tool", default=None, metavar="NAME", help="the tool's name")
    check.add_argument(
        "--schema",
        type=Path,
        default=None,
        metavar="FILE",
        help="a JSON Schema file for the tool's parameters",
    )
    check.add_argument("--strict", action="store_true", help="turn every repair off")
    check.add_argument(
        "--jsonl", action="store_true", help='read lines {"raw": ..., "tool": ..., "schema": ...}'
    )
    check.set_defaults(handler=_run_check)


def _run_check(args: argparse.Namespace) -> int:
    policy = STRICT_POLICY if args.strict else DEFAULT_POLICY
    if not args.jsonl and args.tool is None:
        sys.stderr.write("toolwire: check needs --tool NAME (or --jsonl)\n")
        return 2
    schema = _compile_schema(args.schema, args.tool)
    if args.jsonl:
        return _check_lines(policy, schema)
    raw = sys.stdin.buffer.read().decode("utf-8", "replace")
    verdict = _judge(raw, args.tool, schema, policy)
    sys.stdout.write(_encode(verdict.to_public_dict()).decode() + "\n")
    return 0


def _compile_schema(path: Path | None, tool: str | None) -> SchemaChecker | None:
    """The checker for the ``--schema`` file, compiled once (``ConfigurationError`` if unusable)."""
    if path is None:
        return None
    schema = read_json_file(path, dict, "a JSON Schema object")
    try:
        return SchemaChecker(schema, tool=tool)
    except ConfigurationError as error:
        raise ConfigurationError(f"{path}: {error}") from None


def _judge(raw: str, tool: str, schema: ToolSchema | None, policy: Policy) -> Verdict:
    return parse_arguments(raw, tool=tool, schema=schema, policy=policy)


class _Line(msgspec.Struct):
    raw: str
    tool: str = "tool"
    schema: dict[str, Any] | None = None


_decode_line = msgspec.json.Decoder(_Line).decode


def _check_lines(policy: Policy, default_schema: SchemaChecker | None) -> int:
    failed = False
    out = sys.stdout
    for number, line in enumerate(sys.stdin.buffer, start=1):
        if not line.strip():
            continue
        try:
            item = _decode_line(line)
            schema: ToolSchema | None = item.schema if item.schema is not None else default_schema
            verdict = _judge(item.raw, item.tool, schema, policy)
        except (msgspec.DecodeError, msgspec.ValidationError, ConfigurationError) as error:
            failed = True
            out.write(_encode({"error": f"line {number}: {error}"}).decode() + "\n")
            continue
        out.write(_encode(verdict.to_public_dict()).decode() + "\n")
    return 1 if failed else 0
