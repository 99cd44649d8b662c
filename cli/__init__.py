"""The ``toolwire`` command, one module per sub-command: ``replay`` and ``check``.

Exit codes: 0 when the work was done (a rejected call is a result, not a failure), 1 when the
input could not be read, 2 on a usage error. Errors are one line on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import NoReturn

from ..pipeline.errors import ToolwireError
from .check import add_check_parser
from .common import UnreadableInput
from .replay import add_replay_parser

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="toolwire", description="Make LLM tool calls safe to stream."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    add_replay_parser(commands)
    add_check_parser(commands)
    return parser


def _fail(message: str, code: int) -> NoReturn:
    sys.stderr.write(f"toolwire: {message}\n")
    raise SystemExit(code)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``toolwire`` command; returns the exit code."""
    args = _parser().parse_args(argv)
    try:
        handler = args.handler
        code: int = handler(args)
        return code
    except UnreadableInput as failure:
        _fail(str(failure), 1)
    except ToolwireError as error:
        _fail(str(error), 2)
    except KeyboardInterrupt:
        _fail("interrupted", 130)

