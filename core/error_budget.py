"""A cap on the provider errors one run keeps: a hostile stream cannot grow the error list.

Every non-fatal error of a run goes through one :class:`ErrorBudget` (the adapter's unreadable
pieces, the accumulator's protocol violations): the first :data:`MAX_ERRORS` are kept, the rest
are counted and reported once, at the end, as a ``too_many_errors`` error. Fatal errors are
always kept; there is at most one per run.
"""

from __future__ import annotations

from .events import Event, ProviderError

__all__ = ["MAX_ERRORS", "ErrorBudget"]

#: Non-fatal provider errors kept per run.
MAX_ERRORS = 100


class ErrorBudget:
    """Counts a run's non-fatal errors; private to one run."""

    __slots__ = ("dropped", "kept", "limit")

    def __init__(self, limit: int = MAX_ERRORS) -> None:
        self.limit = limit
        self.kept = 0
        self.dropped = 0

    def add(self, out: list[Event], error: ProviderError) -> None:
        """Append ``error`` to ``out`` while the budget lasts; count it after."""
        if error.fatal or self.kept < self.limit:
            self.kept += not error.fatal
            out.append(error)
        else:
            self.dropped += 1

    def summary(self) -> list[Event]:
        """The one error that counts the dropped ones (nothing when none were dropped)."""
        if not self.dropped:
            return []
        return [
            ProviderError(
                message=(
                    f"{self.dropped} more provider errors came after the first {self.limit}; "
                    "they were counted, not kept"
                ),
                kind="too_many_errors",
            )
        ]
