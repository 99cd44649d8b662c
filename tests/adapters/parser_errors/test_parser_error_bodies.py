"""Real tool-parser error bodies and history refusals, each read into its typed outcome.

The bodies are the corpus's (``corpus_cases.jsonl``, with their provenance; see ``README.md``).
Each runs through a pipeline of its server's provider name, as the server sent it: an HTTP
error status (an ``httpx.Response``), an error line inside Ollama's stream (``status`` -1 or
200 in the corpus), or bytes with no status (a log line, a UI message).
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolwire
from toolwire.adapters.parser_errors import parser_error_readers
from toolwire.stages import server_parsed
from toolwire.stages.server_parsed import QuotedCall

CASES = {
    case["id"]: case
    for case in map(
        json.loads,
        (Path(__file__).parent / "corpus_cases.jsonl").read_text(encoding="utf-8").splitlines(),
    )
}

#: The corpus's server -> the provider name a user of that server passes.
PROVIDERS = {
    "ollama": "ollama",
    "llama.cpp": "llama-server",
    "llama.cpp (autoparser branch)": "llama-server",
    "vllm": "vllm",
    "lmstudio": "lmstudio",
}

CALL = "tool_parser"
HISTORY = "history_rejected"

#: id -> (what the turn's error is, the reason of its one call or None when it has none).
#: Every call here is rejected: none of these bodies may run a call without a markup reader.
OUTCOMES: dict[str, tuple[str, str | None]] = {
    # Ollama harmony, arguments only with a trailing "]": two readings, and no name (no tools
    # known): nothing is made up.
    "pe-ollama-17638-gptoss-trailing-bracket": (CALL, "server_could_not_parse"),
    # The older harmony form quotes nothing; the one tool offered names the call.
    "pe-ollama-12064-gptoss-invalid-bracket": (CALL, "server_could_not_parse"),
    # In band, inside the stream; the quoted arguments stop inside a string.
    "pe-ollama-langchain34746-gptoss-unterminated": (CALL, "truncated"),
    # Ollama 0.11.4's line with the message as its key (ollama/ollama#11781).
    "pe-ollama-11704-stream-wrong-key": (CALL, "server_could_not_parse"),
    # qwen3: "unexpected end of JSON input", nothing quoted: cut, by the parser's word.
    "pe-ollama-14492-qwen35-eoi": (CALL, "truncated"),
    "pe-ollama-14570-qwen3-log": (CALL, "truncated"),
    # llama-server's tail, in the model's markup, read by the text-call readers: a lone
    # closing tag holds no call; a call cut inside a tag never runs. (The tails that hold
    # whole calls are RECOVERED, below.)
    "pe-llamacpp-20761-pos12-endtag-only": (CALL, "server_could_not_parse"),
    "pe-llamacpp-pw9-pos0-cut": (CALL, "truncated"),
    # LM Studio answers 200 and drops the call on Chat Completions; its words (its
    # ``/v1/responses`` answers them as a 500: lmstudio-bug-tracker#2224) are known now
    # (``lmstudio/tool-call``, adapters/parser_wordings.py). Its log line, 526 bytes handed over
    # as a body with no status, is read only as far as a body that is no stream is (its head):
    # no stream, as before; the UI message, read whole, is the model's broken call.
    "pe-lmstudio-942-gptoss-unexpected-end": ("not_a_stream", None),
    "pe-lmstudio-js-493-gptoss-expected-message": (CALL, "server_could_not_parse"),
    # Only the exception's class name is known: not a body toolwire knows.
    "pe-vllm-32638-multi-call-extra-data-400": ("http_status", None),
    "rh-llamacpp-25510-args-open-brace": (HISTORY, None),
    "rh-llamacpp-club3090-665-unterminated-object": (HISTORY, None),
    "rh-llamacpp-pentagi-313-via-litellm": (HISTORY, None),
    "rh-llamacpp-22948-args-brace-string": (HISTORY, None),
    "rh-llamacpp-22072-missing-closing-quote": (HISTORY, None),
    "rh-vllm-43995-unescaped-quotes": (HISTORY, None),
    "rh-vllm-codexpp-1019-delimiter-via-proxy": (HISTORY, None),
    "rh-vllm-codexpp-1019-property-name": (HISTORY, None),
    "rh-vllm-hermesagent-12643-unterminated": (HISTORY, None),
}

#: The tails of llama-server's output that hold whole calls, read by the text-call readers: id ->
#: the (name, arguments) of each call, which runs (the tools here declare no properties, so the
#: values stay strings), or None: the corpus's ``expected`` calls.
RECOVERED: dict[str, list[tuple[str, dict[str, Any]]] | None] = {
    "pe-llamacpp-pw9-pos60-complete": None,
    "pe-llamacpp-pw9-pos72-four-calls": None,
    # The reporter elided the values ("(...)"): what the quote holds is what is read.
    "pe-llamacpp-24644-elided": [("write", {"content": " {\n(...)\n }\n\n ", "path": "(...)\n "})],
    # Newlines flattened to spaces by a UI: the spaces are the values' (as in Qwen's parser,
    # one line feed around a value is the markup's, nothing else).
    "pe-llamacpp-openclaw-61838-flattened": [
        ("tavily_search", {"query": " latest OpenClaw features 2026 ", "count": " 3 "})
    ],
}


def recovered_calls(case_id: str) -> list[tuple[str, Any]]:
    calls = RECOVERED[case_id]
    if calls is not None:
        return calls
    return [(call["name"], call["arguments"]) for call in CASES[case_id]["expected"]]


_FIRST_OLLAMA_LINE = {"model": "m", "message": {"role": "assistant", "content": ""}, "done": False}


def tools_of(names: Sequence[str] | None) -> list[dict[str, Any]] | None:
    if not names:
        return None
    return [
        {"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}
        for name in names
    ]


def source_of(provider: str, status: int | None, text: str) -> Any:
    """The body as the client received it (see the module docstring)."""
    if status is not None and status >= 300:
        return httpx.Response(status, content=text.encode())
    if provider == "ollama" and status in (-1, 200):
        line = {"error": text} if status == -1 else json.loads(text)
        return b"".join(json.dumps(item).encode() + b"\n" for item in (_FIRST_OLLAMA_LINE, line))
    return text.encode()


async def turn_of(case: dict[str, Any], **options: Any) -> toolwire.Turn:
    provider = PROVIDERS[case["server"]]
    pipeline = toolwire.Pipeline(provider, tools=tools_of(case["tools"]), **options)
    return await pipeline.collect(source_of(provider, case["status"], case["text"]))


def test_the_table_covers_the_corpus() -> None:
    assert set(OUTCOMES) | set(RECOVERED) == set(CASES)
    assert not set(OUTCOMES) & set(RECOVERED)


@pytest.mark.anyio
@pytest.mark.parametrize("case_id", sorted(OUTCOMES))
async def test_each_real_body_has_its_typed_outcome(case_id: str) -> None:
    case = CASES[case_id]
    kind, reason = OUTCOMES[case_id]
    turn = await turn_of(case)
    assert [error.kind for error in turn.errors] == [kind]
    assert not turn.runnable, "nothing runs that no reader read whole from the server's error"
    if kind == CALL:
        (call,) = turn.calls
        assert call.verdict is not None
        assert call.verdict.reason == reason
        assert turn.stop_reason == "tool_calls"
        message = call.verdict.message or ""
        assert message.startswith("The server (")
        assert "could not parse" in message
        # The provider's status and body stay on the turn.
        (error,) = turn.errors
        assert not error.fatal
        assert error.raw
        if isinstance(case["status"], int) and case["status"] >= 300:
            assert error.code == str(case["status"])
        if case["expected"] == "truncated" and case.get("raw_is") != "tail":
            # (A cut in quoted markup is its reader's to see: below, with a reader.)
            assert turn.truncated
            assert call.truncated
    else:
        assert turn.calls == ()
        assert turn.stop_reason == "error"
        assert not turn.truncated
    if kind == HISTORY:
        assert "repair_history" in turn.errors[0].message


@pytest.mark.anyio
async def test_a_quote_of_arguments_is_judged_with_the_one_tool_offered() -> None:
    # ollama/ollama#17638's raw, with the one tool offered: named, judged, and still not run
    # ("}]": the "]" is part of what the model wrote as arguments, two readings).
    case = dict(CASES["pe-ollama-17638-gptoss-trailing-bracket"], tools=["apply_patch"])
    turn = await turn_of(case)
    (call,) = turn.calls
    assert call.name == "apply_patch"
    assert call.outcome == "rejected"
    assert call.verdict is not None
    assert call.verdict.reason == "not_json"


@pytest.mark.anyio
async def test_a_quote_with_exactly_one_reading_is_recovered() -> None:
    body = {"error": 'error parsing tool call: raw=\'{"path": "a.txt",}\', err=invalid character'}
    turn = await toolwire.Pipeline("ollama", tools=tools_of(["write_file"])).collect(
        httpx.Response(500, content=json.dumps(body).encode())
    )
    (call,) = turn.calls
    assert call.outcome == "repaired"
    assert call.arguments == {"path": "a.txt"}
    assert call.verdict is not None
    assert call.verdict.repairs == ("trailing_commas",)
    assert turn.stop_reason == "tool_calls"
    assert [e.kind for e in turn.errors] == [CALL]


@pytest.mark.anyio
async def test_the_same_bodies_on_the_openai_shape_of_ollama() -> None:
    # Ollama's /v1 wraps the same message in OpenAI's error object (openai.NewError).
    message = CASES["pe-ollama-14492-qwen35-eoi"]["text"]
    body = {"error": {"message": message, "type": "api_error", "param": None, "code": None}}
    turn = await toolwire.Pipeline("ollama-openai").collect(
        httpx.Response(500, content=json.dumps(body).encode())
    )
    (call,) = turn.calls
    assert call.verdict is not None
    assert call.verdict.reason == "truncated"
    assert turn.truncation_evidence == ("server_parser",)
    assert turn.cut_by == "unknown"


@pytest.mark.anyio
async def test_an_in_band_error_in_a_chat_stream() -> None:
    text = "error parsing tool call: raw='{\"q\": 1', err=unexpected end of JSON input"
    body = b'data: {"choices":[{"index":0,"delta":{"content":"Let me"}}]}\n\n'
    body += b"data: " + json.dumps({"error": {"message": text}}).encode() + b"\n\n"
    turn = await toolwire.Pipeline("ollama-openai", tools=tools_of(["search"])).collect(body)
    assert turn.text == "Let me"
    (call,) = turn.calls
    assert call.name == "search"
    assert call.truncated
    assert call.outcome == "rejected"


@pytest.mark.anyio
async def test_a_body_cut_inside_its_quote_never_runs() -> None:
    # toolwire reads 64 KiB of an error body: a quote cut there may lack any part.
    raw = '{"path": "a.txt"}'
    cut = json.dumps({"error": f"error parsing tool call: raw='{raw}', err=x"})[:-12]
    turn = await toolwire.Pipeline("ollama", tools=tools_of(["write_file"])).collect(
        httpx.Response(500, content=cut.encode())
    )
    (call,) = turn.calls
    assert call.outcome == "rejected"
    assert call.verdict is not None
    assert call.verdict.reason == "lost_in_transit"
    assert "could not parse" in (call.verdict.message or "")


@pytest.mark.anyio
@pytest.mark.parametrize("case_id", sorted(RECOVERED))
async def test_whole_calls_in_a_quote_of_the_output_are_recovered(case_id: str) -> None:
    # No reader registered by the user: the text-call readers are built in.
    turn = await turn_of(CASES[case_id])
    expected = recovered_calls(case_id)
    assert [(c.name, c.arguments) for c in turn.calls] == expected
    assert len(turn.runnable) == len(expected)
    assert len({c.call_id for c in turn.calls}) == len(turn.calls)
    assert turn.stop_reason == "tool_calls"
    assert [e.kind for e in turn.errors] == [CALL]


@pytest.mark.anyio
async def test_a_call_in_a_quote_still_meets_its_schema() -> None:
    case = CASES["pe-llamacpp-pw9-pos72-four-calls"]
    strict = {"type": "object", "properties": {"filePath": {"type": "integer"}}}
    tools = [
        *tools_of(["task", "bash"]),
        {"type": "function", "function": {"name": "read", "parameters": strict}},
    ]
    turn = await toolwire.Pipeline("llama-server", tools=tools).collect(
        source_of("llama-server", case["status"], case["text"])
    )
    assert [(c.name, c.outcome) for c in turn.calls] == [("bash", "ok")] + [
        ("read", "rejected")
    ] * 3
    assert [c.name for c in turn.runnable] == ["bash"]
    for call in turn.calls[1:]:
        assert call.verdict is not None
        assert call.verdict.reason == "schema"
        assert (call.verdict.message or "").startswith("The server (llama.cpp) could not parse")


def _qwen3_coder_xml(text: str, names: Collection[str]) -> list[QuotedCall] | None:
    """A stand-in for a user's reader of Qwen3-Coder XML (tests only)."""
    if "<function=" not in text:
        return None
    found: list[QuotedCall] = []
    for block in re.split(r"<tool_call>", text)[1:]:
        head = re.match(r"\s*<function=([^>\s]+)>", block)
        if head is None:
            return None
        values = dict(re.findall(r"<parameter=([^>\s]+)>\n?(.*?)\n?</parameter>", block, re.S))
        complete = "</function>" in block
        found.append(QuotedCall(head[1], msgspec.json.encode(values).decode(), complete))
    return found


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("case_id", "runnable"),
    [
        ("pe-llamacpp-pw9-pos60-complete", 1),
        ("pe-llamacpp-pw9-pos72-four-calls", 4),
        ("pe-llamacpp-pw9-pos0-cut", 0),
    ],
)
async def test_quoted_output_goes_to_the_markup_readers(
    case_id: str, runnable: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(server_parsed, "_QUOTED_OUTPUT_READERS", [_qwen3_coder_xml])
    case = CASES[case_id]
    turn = await turn_of(case)
    assert len(turn.runnable) == runnable
    expected = case["expected"]
    if isinstance(expected, list):
        assert [(c.name, c.arguments) for c in turn.calls] == [
            (call["name"], call["arguments"]) for call in expected
        ]
        assert len({c.call_id for c in turn.calls}) == len(turn.calls)
    else:
        (call,) = turn.calls
        assert call.truncated
        assert not call.may_run


@pytest.mark.anyio
async def test_a_users_reader_has_the_first_word(monkeypatch: pytest.MonkeyPatch) -> None:
    case = CASES["pe-llamacpp-pw9-pos60-complete"]
    asked: list[str] = []

    def unsure(text: str, names: Collection[str]) -> None:
        asked.append(text)
        return None

    def refuses(text: str, names: Collection[str]) -> list[QuotedCall]:
        return []

    monkeypatch.setattr(server_parsed, "_QUOTED_OUTPUT_READERS", [])
    server_parsed.use_quoted_output_reader(unsure)  # None: the built-in reader reads it
    assert len((await turn_of(case)).runnable) == 1
    assert asked == [case["raw"]]
    server_parsed.use_quoted_output_reader(refuses)  # []: certainly no call
    (call,) = (await turn_of(case)).calls
    assert call.verdict is not None
    assert call.verdict.reason == "server_could_not_parse"


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300), st.sampled_from([400, 404, 500, 502, 503]))
def test_unknown_bodies_stay_what_they_were(text: str, status: int) -> None:
    known = (
        "error parsing tool call",
        "failed to parse JSON",
        "Failed to parse input at pos",
        "Failed to parse tool call",
        "message header",
        "line ",
        "does not match the expected",
        "invalid character",
        "unexpected end of JSON input",
        "unexpected EOF",
        "failed to parse",
        "incomplete GLM tool call",
        "parse Glimmer call",
        "json: cannot unmarshal",
        "expected element type",
        "XML syntax error",
    )
    if any(word in text for word in known):
        return
    for reader in parser_error_readers("openai-compatible"):
        assert reader(status, text) is None
        assert reader(status, json.dumps({"error": {"message": text}})) is None
