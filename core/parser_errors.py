"""The port of tool-parser error readers: what a server's error body says about the model's call.

A local server runs its own tool parser on the model's output. When that parser fails, some
servers answer an error instead of the call: Ollama a 500 ``error parsing tool call: raw='...',
err=...`` or ``failed to parse JSON: unexpected end of JSON input``, llama-server a 500
``Failed to parse input at pos N: <the output from N on>``, vLLM's harmony parser a 500
``unexpected tokens remaining in message header``, sometimes in band, inside the stream. Such a
body is the model's broken call, not an outage: read as an outage, a framework retries the same
request and the model never learns what was wrong with its call.

Each server family's error shape is read by one pure function, a :data:`ParserErrorReader`:
``(status, body) -> ParserErrorFacts | None`` (``None``: not this family's tool-parser failure;
``status`` is ``None`` for an error that came in band). Readers live with their provider's
adapter; :mod:`toolwire.adapters.parser_errors` lists them per provider name (a user adds one
with ``toolwire.lowlevel.register_parser_error``), the pipeline hands a provider's readers to its
mapper in :attr:`~toolwire.core.mapper.MapperSettings.parser_errors`, and the mapper turns a
recognized failure into a call (:meth:`~toolwire.core.stream_state.StreamState.parser_failed`),
which the judge reads from what the body quoted.

A reader also says what the words are about: the model's call (``about="tool_call"``), its output
as a whole (``about="output"``: the server's words name no call, so the message to the model does
not either), or a server refusing the request's *history* (an earlier call's arguments it could
not read): ``about="history"``. That is not the model's call of this turn;
the error stays fatal, with its kind ``history_rejected`` (``Pipeline.repair_history`` mends such
a history).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Literal

import msgspec

from .events import QuotedForm

__all__ = ["ErrorAbout", "ParserErrorFacts", "ParserErrorReader", "read_parser_error"]

#: What a recognized error body is about: the model's call of this turn; the model's ``output`` as
#: a whole, which the server could not parse (llama.cpp's PEG parser: a call may be in it, or not;
#: its words do not say); or the request's history.
ErrorAbout = Literal["tool_call", "output", "history"]


class ParserErrorFacts(msgspec.Struct, frozen=True, kw_only=True):
    """What a known tool-parser error body says, read by its server family's reader.

    - ``server``: who said it (``ollama``, ``llama.cpp``, ``vllm``...), named in the message;
    - ``error``: the parser's own words (``unexpected end of JSON input``);
    - ``about``: what the words are about (:data:`ErrorAbout`): a message to the model names a
      call only when they do;
    - ``quoted``: the text the body quotes of the model's output, or ``None``; ``quoted_form``
      says what it is (only the ``arguments``, or the model's ``output`` in its own markup,
      which may hold several calls, a stray closing tag, or a cut tag);
    - ``name``: the tool the body names, when it names one;
    - ``cut``: the parser said the text ended early (``unexpected end of JSON input``);
    - ``quote_whole``: ``False`` when the body itself was cut short before the quote ended (a
      body over the size read): the quote may lack any part of the call, which never runs.
    """

    server: str
    error: str
    about: ErrorAbout = "tool_call"
    quoted: str | None = None
    quoted_form: QuotedForm = "nothing"
    name: str | None = None
    cut: bool = False
    quote_whole: bool = True


#: One server family's reader: ``(HTTP status or None when in band, body text)`` to the facts,
#: or ``None`` when the body is not that family's tool-parser failure. Pure and cheap: it runs
#: only on error bodies, but on every one of them.
ParserErrorReader = Callable[[int | None, str], ParserErrorFacts | None]


def read_parser_error(
    readers: Iterable[ParserErrorReader], status: int | None, body: str
) -> ParserErrorFacts | None:
    """The facts of the first reader that knows ``body``, or ``None`` (an unknown error)."""
    for reader in readers:
        facts = reader(status, body)
        if facts is not None:
            return facts
    return None
