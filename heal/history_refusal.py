"""A server's refusal of the request's history, passed on with what its client can do about it.

Some servers read every earlier call of a request's history and refuse the whole request when
one call's arguments do not parse: llama-server answers 500 ``Failed to parse tool call
arguments as JSON: ...``, vLLM up to 0.28 answers 400 ``Expecting ',' delimiter: ...``
(the rows ``about="history"`` of :mod:`toolwire.adapters.parser_wordings`). The healing
rewrites every such call it can read as unreadable before the request goes up
(``x-toolwire-history-repaired``), so a refusal that still comes is about a call toolwire reads
as a JSON object and the server does not, and the same request would be refused every time.

What the client gets is the server's own answer, status and body, as for any error the model
did not cause: the client's SDK raises what it raises for that server (a 400 is a bad request,
not a broken gateway), and the server's words name the position they failed at. toolwire adds
what it knows and the client cannot (:func:`refusal_headers`): that the history was refused,
what toolwire already repaired, which call it is when toolwire can tell (it cannot: it read
every call as valid), and what to change; and ``x-should-retry: false``, since sending the same
history again is refused again (the openai and anthropic SDKs resend a 500 otherwise).
Whole or streamed alike: the server refuses before any byte of an answer, so a streamed request
gets the refusal as its HTTP error, not a 200 with an error in band.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..core.parser_errors import ParserErrorFacts

__all__ = ["HISTORY_REFUSED_HEADER", "SHOULD_RETRY", "refusal_headers"]

#: The response header that says the server refused the request's history, and what to do.
HISTORY_REFUSED_HEADER = "x-toolwire-history-refused"
#: The header the openai and anthropic SDKs obey before sending a request again.
SHOULD_RETRY = "x-should-retry"


def refusal_headers(facts: ParserErrorFacts, repaired: Mapping[str, int]) -> dict[str, str]:
    """The headers added to the server's refusal of the history (``facts``: its words, read by
    its server's reader), ``repaired``: the earlier calls toolwire rewrote before sending (kind
    -> calls, ``HealPlan.repaired``). ASCII on one line: what a header may hold."""
    calls = sum(repaired.values())
    done = (
        f"toolwire had already rewritten {calls} earlier call{'' if calls == 1 else 's'} whose "
        "arguments were not a JSON object (x-toolwire-history-repaired) and read the others as "
        "JSON objects"
        if calls
        else "toolwire read every earlier call's arguments as a JSON object"
    )
    told = (
        f"{facts.server} refused this request's history: it could not read the arguments of "
        f"an earlier tool call (its words are in the body). {done}, so it cannot tell which "
        "call the server refused, and the same history is refused again. Find the call by the "
        "server's words, then send its arguments as one JSON object, or replay it as a "
        "rejected call: arguments {} and a tool result that says why."
    )
    return {
        HISTORY_REFUSED_HEADER: told.encode("ascii", "replace").decode("ascii"),
        SHOULD_RETRY: "false",
    }
