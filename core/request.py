"""What toolwire reads from the request body that was sent, so that what it says stays true.

Only the request shows some facts: the output limit (is usage at the limit?), the stop
sequences (a call cut by one is not cut by the limit), the tools (to validate calls) and the
requested model. Each adapter reads its provider's shape into :class:`RequestFacts`; a caller
passes the body once (``collect(source, request=body)``) instead of repeating those values.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from .errors import ConfigurationError

__all__ = ["RequestFacts", "limit_from", "stop_sequences_from"]


class RequestFacts(msgspec.Struct, frozen=True, kw_only=True):
    """The facts of one request body. ``None`` is "the body does not say"."""

    max_tokens: int | None = None
    #: ``()`` when the body is known and has no stop sequence.
    stop_sequences: tuple[str, ...] = ()
    tools: tuple[Any, ...] | None = None
    tool_choice: Any = None
    model: str | None = None


def limit_from(body: Mapping[str, Any], *keys: str) -> int | None:
    """The first of ``keys`` present in ``body``, checked to be a positive int."""
    for key in keys:
        value = body.get(key)
        if value is None:
            continue
        if type(value) is not int or value < 1:
            raise ConfigurationError(f"request {key} must be a positive int, got {value!r}")
        return value
    return None


def stop_sequences_from(value: object, key: str = "stop") -> tuple[str, ...]:
    """A ``stop`` value (one string, a list of strings, or nothing) as a tuple."""
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, Sequence) and all(isinstance(item, str) for item in value):
        return tuple(value)
    raise ConfigurationError(f"request {key} must be a string or a list of strings, got {value!r}")
