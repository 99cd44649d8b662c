"""What every ``toolwire`` command shares: its parser, the unreadable-input error, reading JSON."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, NoReturn

import msgspec

__all__ = ["CommandParser", "UnreadableInput", "fail", "read_json_file"]


def fail(message: str, code: int) -> NoReturn:
    """One line on stderr, then exit with ``code``."""
    sys.stderr.write(f"toolwire: {message}\n")
    raise SystemExit(code)


class CommandParser(argparse.ArgumentParser):
    """argparse, with a usage error written as one line (and exit code 2)."""

    def error(self, message: str) -> NoReturn:
        """Exit 2 with one line that points to ``--help``."""
        fail(f"{message} (see {self.prog} --help)", 2)


class UnreadableInput(Exception):
    """An input file or stream that cannot be read: one line on stderr, exit code 1."""


def read_json_file(path: Path, expected: type, what: str) -> Any:
    """The JSON value in ``path``, which must be a ``expected`` (a list, a dict...)."""
    try:
        value = msgspec.json.decode(path.read_bytes())
    except OSError as error:
        raise UnreadableInput(f"cannot read {path}: {error.strerror or error}") from None
    except msgspec.DecodeError as error:
        raise UnreadableInput(f"{path} is not JSON: {error}") from None
    if not isinstance(value, expected):
        raise UnreadableInput(f"{path} must hold {what}")
    return value
