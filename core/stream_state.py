"""The provider-independent state of one stream, which every adapter keeps the same way.

An adapter translates its provider's words; what follows from them is decided here, once for
every provider: a piece of the stream that cannot be read costs every call that may have lost
text its right to run; a fatal error ends the turn in ``error``; a body that was never an event
stream, or was empty, is said to be so (never a "dropped connection"); the calls still open at
the end are closed and the ``Finish`` decided (:mod:`toolwire.core.finish`), exactly once.
"""

from __future__ import annotations

from .accumulate import CallAccumulator
from .error_budget import ErrorBudget
from .events import Event, ProviderError, StreamEnd
from .finish import FinishFacts, close_calls_and_finish
from .mapper import MapperSettings, cap_text

__all__ = ["StreamState"]


class StreamState:
    """Calls, finish facts and the end-of-stream guard of one stream. Private to one run."""

    __slots__ = ("calls", "ended", "errors", "facts")

    def __init__(self, settings: MapperSettings, *, hides_length_finish: bool = False) -> None:
        self.errors = ErrorBudget()
        self.calls = CallAccumulator(
            emit_deltas=settings.argument_deltas,
            max_argument_chars=settings.max_argument_chars,
            errors=self.errors,
        )
        self.facts = FinishFacts(
            settings.max_tokens,
            stop_sequences=settings.stop_sequences,
            hides_length_finish=hides_length_finish,
        )
        self.ended = False

    def unreadable(self, out: list[Event], error: ProviderError) -> None:
        """A piece of the stream could not be read: report it; calls that may lack it never run."""
        self.calls.lose_pieces()
        self.errors.add(out, error)

    def report(self, out: list[Event], error: ProviderError) -> None:
        """A non-fatal error that costs no call anything (within the run's error budget)."""
        self.errors.add(out, error)

    def fatal(self, out: list[Event], error: ProviderError) -> None:
        """A fatal error: the turn ends in ``error``, the call being written is cut."""
        self.facts.error = True
        out.append(error)

    def fail(self, error: ProviderError) -> list[Event]:
        """:meth:`ProviderMapper.fail` for every adapter: a fatal error, then the end."""
        out: list[Event] = []
        if not self.ended:
            self.fatal(out, error)
            self.end(out)
        return out

    def not_a_stream(self, out: list[Event], *, size: int, head: bytes, what: str) -> None:
        """Nothing of ``what`` (an event stream...) was in the body: say what came instead."""
        if size == 0:
            error = ProviderError(
                message="the server sent an empty body: no response (not a truncation)",
                kind="empty_response",
                fatal=True,
            )
        else:
            error = ProviderError(
                message=(
                    f"the response body is not {what} ({size} bytes); it begins: "
                    f"{cap_text(head, 200)}"
                ),
                kind="not_a_stream",
                raw=cap_text(head),
                fatal=True,
            )
        self.fatal(out, error)

    def end(self, out: list[Event]) -> None:
        """Close the open calls and emit ``Finish`` and ``StreamEnd``; only the first call acts."""
        if self.ended:
            return
        self.ended = True
        out.extend(self.errors.summary())
        out.append(close_calls_and_finish(self.calls, self.facts, out))
        out.append(StreamEnd(terminated=self.facts.terminated))
