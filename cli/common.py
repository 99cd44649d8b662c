"""What every ``toolwire`` command shares: the unreadable-input error and reading JSON files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

__all__ = ["UnreadableInput", "read_json_file"]


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
