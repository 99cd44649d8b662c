"""Ollama's tool-parser failures, read from its error bodies (native ``/api/chat`` and ``/v1``).

Ollama parses the model's output itself (``model/parsers/``, ``harmony/``); when a parser fails
it answers HTTP 500 (or, once the stream began, an ``{"error": ...}`` line) instead of the call.
Two forms are known, each from Ollama's source and from user reports:

- the harmony parser (gpt-oss): ``error parsing tool call: raw='<ARGUMENTS>', err=<Go error>``
  (``harmony/harmonyparser.go``: ``fmt.Errorf("error parsing tool call: raw='%s', err=%w")``;
  ollama/ollama#12884, #17638, langchain-ai/langchain#34746). ``raw`` is the call's ARGUMENTS
  only: its name is the harmony recipient, which the error does not quote. Older servers said
  ``error parsing tool call: <Go error>`` with no ``raw`` (ollama/ollama#12064);
- the qwen3 parser (Qwen3 / Qwen3.5): ``failed to parse JSON: <Go error>``, quoting nothing
  (``model/parsers/qwen3.go``; ollama/ollama#14492, #14570).

``unexpected end of JSON input`` (Go's ``encoding/json``) says the text ended early: the call
was cut (at ``num_predict`` in #14570), so it is ``cut``.
"""

from __future__ import annotations

import re

from ...core.parser_errors import ParserErrorFacts
from ..error_bodies import error_message

__all__ = ["read_ollama_parser_error"]

_HARMONY = "error parsing tool call"
_QWEN3 = re.compile(r"failed to parse JSON: (?P<err>.*)", re.DOTALL)
_RAW_OPEN = "raw='"
_RAW_CLOSE = "', err="
#: Go's ``encoding/json`` error for a text that ends inside a value.
_CUT = "unexpected end of JSON input"


def read_ollama_parser_error(status: int | None, body: str) -> ParserErrorFacts | None:
    """Ollama's two tool-parser errors (see the module docstring), or ``None``.

    Only a 500 or an error in band (``status`` ``None``): a 400 with the same words would be
    about the request, not the model's output.
    """
    if status is not None and status != 500:
        return None
    message, whole = error_message(body)
    at = message.find(_HARMONY)
    if at >= 0:
        rest = message[at + len(_HARMONY) :].lstrip(":").strip()
        if rest.startswith(_RAW_OPEN):
            # raw may itself hold "', err=": the last one ends it (the error never holds it).
            close = rest.rfind(_RAW_CLOSE)
            if close >= len(_RAW_OPEN):
                raw, err = rest[len(_RAW_OPEN) : close], rest[close + len(_RAW_CLOSE) :]
                whole = True  # the quote ended; only the error after it may be cut
            else:  # the message was cut before err=: everything after raw=' is the quote
                raw, err, whole = rest[len(_RAW_OPEN) :], "", False
            return ParserErrorFacts(
                server="ollama",
                error=err or "(the error's reason was not received)",
                quoted=raw,
                quoted_form="arguments",
                cut=_CUT in err,
                quote_whole=whole,
            )
        return ParserErrorFacts(server="ollama", error=rest or _HARMONY, cut=_CUT in rest)
    match = _QWEN3.search(message)
    if match is not None:
        err = match["err"].strip()
        return ParserErrorFacts(
            server="ollama", error=f"failed to parse JSON: {err}", cut=_CUT in err
        )
    return None
