"""The error every adapter reports for an event or line over the framing cap.

The framing decoders (:mod:`.sse`, :mod:`.ndjson`) stop buffering an oversized event and hand
back a :class:`FrameOverflow` in its place. Whatever the event held is lost, so it is reported
as an unreadable piece (``too_long``): any call being written then never runs.
"""

from __future__ import annotations

from ..pipeline.events import ProviderError
from ..pipeline.mapper import cap_text
from .sse import FrameOverflow

__all__ = ["overflow_error"]


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
