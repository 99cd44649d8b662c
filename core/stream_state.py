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
from .events import Event, ProviderError, ServerParse, StreamEnd
from .finish import FinishFacts, close_calls_and_finish
from .mapper import MapperSettings, cap_text
from .parser_errors import ParserErrorFacts, read_parser_error

__all__ = ["StreamState"]


class StreamState:
    """Calls, finish facts and the end-of-stream guard of one stream. Private to one run."""

    __slots__ = ("calls", "ended", "errors", "facts", "parser_errors")

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
        #: The readers of this provider's known tool-parser error bodies.
        self.parser_errors = settings.parser_errors

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

    def fatal_or_known(
        self, out: list[Event], error: ProviderError, status: int | None, body: bytes
    ) -> None:
        """:meth:`fatal`, unless ``body`` is known: then the call it quotes, or a history error.

        ``error`` is the fatal error the body would otherwise be (an ``http_status`` error, an
        in-band error payload, a body that is no stream); ``status`` is ``None`` when no HTTP
        status goes with the body (an error in band, a body handed over as bytes).
        """
        if not self.known_error(out, error, status, body):
            self.fatal(out, error)

    def known_error(
        self, out: list[Event], error: ProviderError, status: int | None, body: bytes
    ) -> bool:
        """Read ``body`` as a known tool-parser failure or history refusal; True when it was
        one (the call it quotes, or a fatal ``history_rejected`` error, is then in ``out``)."""
        if not self.parser_errors:
            return False
        facts = read_parser_error(self.parser_errors, status, body.decode("utf-8", "replace"))
        if facts is None:
            return False
        if facts.about == "history":
            self.fatal(out, _history_error(error, facts))
        else:
            self.parser_failed(out, error, facts)
        return True

    def parser_failed(
        self, out: list[Event], error: ProviderError, facts: ParserErrorFacts
    ) -> None:
        """The server's tool parser failed on the model's call: the call is what its error quoted.

        The error is kept, not fatal (``tool_parser``: the server is fine, the call was broken);
        the failed call opens last, named as the body names it (or ``""``), its arguments the
        quoted text, marked :class:`ServerParse` for the judge; the turn ends ``tool_calls``.

        Calls the server sent before its error (in a stream) were parsed by the server itself,
        and its parser fails only once the output is over (llama-server parses the finished
        output again and fails there; Ollama sends a call only once it parsed it whole): each
        is judged as it stands, closed by the finish as the end of a stream of unknown cause
        closes it, cut only when its text visibly stops inside a value. The end a provider
        sends for each call (Anthropic's ``content_block_stop``) never came because the server
        failed, so it is not waited for. When such calls came and the error quotes nothing, no
        call is opened for it: nothing of the output is known beyond what was sent, and a call
        opened for "the rest" would ask the model for calls it already made (issue 27: the
        proxy withheld the call llama-server sent before its error).
        """
        calls = self.calls
        for call in calls.open_calls():
            call.expects_end = False
        what = "output" if facts.about == "output" else "tool call"
        said = f"the server ({facts.server}) could not parse the model's {what}: {facts.error}"
        self.errors.add(
            out,
            ProviderError(
                message=f"{error.message} — {said}" if error.kind == "http_status" else said,
                kind="tool_parser",
                code=error.code,
                raw=error.raw,
            ),
        )
        self.facts.parser_failed = True
        self.facts.reason = "tool_calls"
        if calls.calls and not facts.quoted:
            return  # the calls the server sent are the model's calls (see above)
        call = calls.start(out, call_id=None, name=facts.name or None)
        call.server_parse = ServerParse(
            server=facts.server,
            error=cap_text(facts.error, 300),
            quoted=facts.quoted_form,
            about="output" if facts.about == "output" else "tool_call",
        )
        if not facts.quote_whole:
            call.damage = "lost_fragment"  # the body was cut inside the quote
        if facts.quoted:
            calls.append_to(out, call, facts.quoted)
        self.facts.parser_cut = facts.cut

    def no_event(self, out: list[Event], *, size: int) -> None:
        """An event stream ended cleanly without one event (``size`` bytes of comments)."""
        self.fatal(
            out,
            ProviderError(
                message=(
                    f"the server sent an event stream with no event in it ({size} bytes of "
                    "comments or keep-alive pings): no response (not a truncation)"
                ),
                kind="empty_response",
                fatal=True,
            ),
        )

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
            if size == len(head):  # the whole body: a JSON error body may be a known one
                self.fatal_or_known(out, error, None, head)
                return
        self.fatal(out, error)

    def end(self, out: list[Event]) -> None:
        """Close the open calls and emit ``Finish`` and ``StreamEnd``; only the first call acts."""
        if self.ended:
            return
        self.ended = True
        out.extend(self.errors.summary())
        out.append(close_calls_and_finish(self.calls, self.facts, out))
        out.append(StreamEnd(terminated=self.facts.terminated))


def _history_error(error: ProviderError, facts: ParserErrorFacts) -> ProviderError:
    """``error`` as the server's refusal of the request's history, saying what to do."""
    return ProviderError(
        message=(
            f"{error.message} — the server ({facts.server}) refused the request's history: an "
            f"earlier tool call's arguments could not be read ({facts.error}). Pipeline."
            "check_history names such calls; Pipeline.repair_history writes them as rejected "
            "calls the server accepts"
        ),
        kind="history_rejected",
        code=error.code,
        raw=error.raw,
        fatal=True,
    )
