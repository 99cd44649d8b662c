"""The ``toolwire`` command, one module per sub-command: ``replay`` and ``check``.

Exit codes: 0 when the work was done (a rejected call is a result, not a failure), 1 when the
input could not be read, 2 on a usage error. Errors are one line on stderr, never a traceback.

Output never fails on its encoding: a character that stdout or stderr cannot encode (an ASCII
terminal, ``PYTHONIOENCODING=ascii``, a Windows console code page) is written as a ``\\uXXXX``
escape, which keeps ``--json`` and ``check`` output valid JSON that decodes to the exact text.
"""

from __future__ import annotations

import argparse
import codecs
import io
import sys
from collections.abc import Sequence
from typing import NoReturn

from ..pipeline.errors import ToolwireError
from .check import add_check_parser
from .common import UnreadableInput
from .replay import add_replay_parser

__all__ = ["main"]

#: The codec error handler registered by :func:`_write_safely`.
_ESCAPE_ERRORS = "toolwire.json_escape"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="toolwire", description="Make LLM tool calls safe to stream."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    add_replay_parser(commands)
    add_check_parser(commands)
    return parser


def _json_escape(character: str) -> str:
    """``\\uXXXX``, or a surrogate pair of them above U+FFFF, as JSON strings spell it."""
    code = ord(character)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def _escape_unencodable(error: UnicodeError) -> tuple[str, int]:
    """A codec error handler: escape what the output encoding cannot write, JSON's way.

    Python's ``backslashreplace`` writes ``\\xe9``, which is not a JSON escape: a ``--json``
    consumer would get a parse error instead of the text. In JSON output every non-ASCII
    character sits inside a string, where ``\\u00e9`` is that character; in the human summary
    it reads as well as ``\\xe9`` would.
    """
    if not isinstance(error, UnicodeEncodeError):
        raise error
    unencodable = error.object[error.start : error.end]
    return "".join(_json_escape(character) for character in unencodable), error.end


def _write_safely() -> None:
    """Make stdout and stderr escape what their encoding cannot write, instead of raising.

    A recording's text and arguments are any Unicode; the output may be ASCII. Only real text
    streams are reconfigured (a replaced ``sys.stdout`` may be anything, or ``None``).
    """
    codecs.register_error(_ESCAPE_ERRORS, _escape_unencodable)
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper) and not stream.closed:
            stream.reconfigure(errors=_ESCAPE_ERRORS)


def _fail(message: str, code: int) -> NoReturn:
    sys.stderr.write(f"toolwire: {message}\n")
    raise SystemExit(code)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``toolwire`` command; returns the exit code."""
    _write_safely()
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

