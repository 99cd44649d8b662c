"""The ``toolwire`` command, one module per sub-command: ``replay``, ``check``, ``demo``, ``serve``.

Exit codes: 0 when the work was done (a rejected call is a result, not a failure), 1 when the
input could not be read (or, for ``demo``, the run could not be made), 2 on a usage error, 130
when interrupted. Errors are one line on stderr, never a traceback. Each command's ``--help``
ends with examples and its exit codes.

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

from ..core.errors import ToolwireError
from .check import add_check_parser
from .common import CommandParser, UnreadableInput, fail
from .demo import add_demo_parser
from .replay import add_replay_parser
from .serve import add_serve_parser

__all__ = ["main"]

#: The codec error handler registered by :func:`_write_safely`.
_ESCAPE_ERRORS = "toolwire.json_escape"


def _parser() -> argparse.ArgumentParser:
    parser = CommandParser(prog="toolwire", description="Make LLM tool calls safe to stream.")
    commands = parser.add_subparsers(dest="command", required=True)
    add_replay_parser(commands)
    add_check_parser(commands)
    add_demo_parser(commands)
    add_serve_parser(commands)
    for name, command in commands.choices.items():
        if name in _EXAMPLES:
            command.epilog = _EXAMPLES[name]
            command.formatter_class = argparse.RawDescriptionHelpFormatter
    return parser


#: The examples and exit codes that end ``--help`` (``demo`` writes its own).
_EXAMPLES = {
    "replay": """\
examples:
  toolwire replay bundled:llama_cpp_write_cut_at_max_tokens
  toolwire replay body.sse --provider llama-cpp --request request.json --json
  toolwire replay body.sse --tools tools.json --max-tokens 256

exit codes:
  0    the stream was read (a rejected call is a result, not a failure)
  1    the file cannot be read, or it is no stream of that provider
  2    usage error (a bad option value, an unusable --tools or --request file)
""",
    "check": """\
examples:
  echo '{"path": "a.txt",}' | toolwire check --tool write
  toolwire check --tool write --schema write.schema.json --strict < arguments.txt
  toolwire check --jsonl < calls.jsonl

exit codes:
  0    every input was judged (a rejected call is a result, not a failure)
  1    a --jsonl line cannot be read or its schema cannot be used
  2    usage error (no --tool, an unusable --schema file)
""",
}


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


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``toolwire`` command; returns the exit code."""
    _write_safely()
    parser = _parser()
    # ``demo`` parses its own options (its modules load only when it runs: the [demo] extra);
    # every other command takes exactly what its parser declares, as parse_args would check.
    args, rest = parser.parse_known_args(argv)
    if rest and not getattr(args, "parses_its_own_options", False):
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    args.rest = rest
    try:
        handler = args.handler
        code: int = handler(args)
        return code
    except UnreadableInput as failure:
        fail(str(failure), 1)
    except ToolwireError as error:
        fail(str(error), 2)
    except KeyboardInterrupt:
        fail("interrupted", 130)
