"""The errors every adapter reports for a piece of the stream it cannot read.

Each is handed to ``StreamState.unreadable``, so any call being written then never runs:

- an event or line over the framing cap: the decoders (:mod:`.sse`, :mod:`.ndjson`) stop
  buffering it and hand back a :class:`FrameOverflow` in its place (``too_long``);
- a data line that is not JSON (``not_json``);
- a chunk whose JSON has a shape the provider never sends (``unknown_shape``).
"""

from __future__ import annotations

import msgspec

from ..core.events import ProviderError
from ..core.mapper import cap_text, quoted_object
from .framing import FrameOverflow

__all__ = [
    "CONVERT_FAILURES",
    "not_json_error",
    "object_shape_error",
    "overflow_error",
    "unknown_shape_error",
]

#: What ``msgspec.convert`` raises for an SDK object (or a dict) of no known shape: a field of
#: another type, or a lone surrogate where it must encode a string (a key, a non-string field).
CONVERT_FAILURES = (msgspec.ValidationError, UnicodeEncodeError)


def overflow_error(item: FrameOverflow) -> ProviderError:
    """A ``too_long`` error quoting the head of the oversized event or line."""
    name = f" ({item.event.decode('utf-8', 'replace')})" if item.event else ""
    return ProviderError(
        message=(
            f"an event{name} of {item.size} bytes passed the {item.limit}-byte framing limit "
            "and was dropped"
        ),
        kind="too_long",
        raw=cap_text(item.head),
    )


def not_json_error(
    error: msgspec.DecodeError, data: bytes, what: str = "a data line"
) -> ProviderError:
    """A ``not_json`` error quoting the line (``what``: how the format calls one)."""
    return ProviderError(
        message=f"{what} that is not JSON: {error}", kind="not_json", raw=cap_text(data)
    )


def unknown_shape_error(
    error: msgspec.ValidationError | str, raw: bytes | str, what: str = "a chunk"
) -> ProviderError:
    """An ``unknown_shape`` error quoting the chunk (``what``: how the format calls one)."""
    return ProviderError(
        message=f"{what} of unknown shape: {error}", kind="unknown_shape", raw=cap_text(raw)
    )


def object_shape_error(
    error: Exception | str, payload: object, what: str = "a chunk"
) -> ProviderError:
    """:func:`unknown_shape_error` for an SDK object's dump, quoted even where ``repr`` recurses."""
    return unknown_shape_error(str(error), quoted_object(payload), what)
