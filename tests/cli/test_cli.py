"""The ``toolwire`` command: replay and check, their output and their exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _toolwire_testdata import STREAMS

from toolwire.cli import main

CUT_12 = STREAMS / "llama-cpp-python/write_max_tokens_12_cut_mid_string.real.sse"
PARALLEL = STREAMS / "openai-chat/parallel_two_calls_sequential_indices_usage_done.sse"


def run(
    capsys: pytest.CaptureFixture[str], *argv: str, stdin: str | None = None
) -> tuple[int, str, str]:
    if stdin is not None:
        import io

        sys.stdin = io.TextIOWrapper(io.BytesIO(stdin.encode()), encoding="utf-8")
    try:
        code = main(list(argv))
    except SystemExit as exit_:
        code = int(exit_.code or 0)
    finally:
        sys.stdin = sys.__stdin__
    out, err = capsys.readouterr()
    return code, out, err


def test_replay_json_has_the_documented_fields(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "replay", str(CUT_12), "--json", "--provider", "llama-cpp")
    assert (code, err) == (0, "")
    data = json.loads(out)
    assert set(data) >= {
        "text",
        "calls",
        "stop_reason",
        "finish_raw",
        "truncated",
        "truncation_evidence",
        "usage",
    }
    assert data["stop_reason"] == "length"
    assert data["finish_raw"] == "tool_calls"
    assert data["truncated"] is True
    assert data["truncation_evidence"] == ["server_profile", "arguments_unterminated"]
    assert data["cut_by"] == "token_limit"
    (call,) = data["calls"]
    assert call["name"] == "write"
    assert call["index"] == 0
    assert call["arguments_raw"] == '{ "path": "C:\\\\Users\\\\'
    assert call["id"] == "call__0_write_cmpl-01a3d96c-f4d5-47ff-8492-19418beeffa2"
    assert call["outcome"] == "rejected"
    assert "output-token limit" in call["message"]


def test_replay_without_the_profile_does_not_claim_the_limit(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run(capsys, "replay", str(CUT_12), "--json")
    data = json.loads(out)
    assert (code, data["stop_reason"], data["cut_by"]) == (0, "tool_calls", "unknown")
    assert "token limit" not in data["calls"][0]["message"]


def test_replay_request_stop_sequences_are_named(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    request = tmp_path / "request.json"
    request.write_text(json.dumps({"model": "m", "max_tokens": 512, "stop": ["Paulo"]}))
    code, out, _ = run(
        capsys, "replay", str(CUT_12), "--json", "--provider", "llama-cpp",
        "--request", str(request),
    )
    data = json.loads(out)
    assert (code, data["stop_reason"], data["cut_by"]) == (0, "tool_calls", "unknown")
    assert '("Paulo")' in data["calls"][0]["message"]


def test_replay_shows_repaired_arguments_and_escapes_newlines(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    body = tmp_path / "repaired.sse"
    chunk = {"id": "x", "model": "m", "choices": [{"index": 0, "delta": {"tool_calls": [
        {"index": 0, "id": "c1", "function": {"name": "write",
                                             "arguments": '{"path": "a",\n "content": "b",}'}}]},
        "finish_reason": "tool_calls"}]}
    body.write_bytes(b"data: " + json.dumps(chunk).encode() + b"\n\ndata: [DONE]\n\n")
    code, out, _ = run(capsys, "replay", str(body))
    assert code == 0
    assert 'raw arguments: "{\\"path\\": \\"a\\",\\n \\"content\\": \\"b\\",}"' in out
    assert 'repaired arguments: {"path":"a","content":"b"}' in out
    assert "no tools given" in out
    assert "provider said: tool_calls" in out


def test_replay_max_tokens_adds_usage_evidence(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "replay", str(PARALLEL), "--json", "--max-tokens", "60")
    assert code == 0
    data = json.loads(out)
    assert data["usage"]["output_tokens"] == 60
    assert data["truncation_evidence"] == ["usage_at_max_tokens"]
    assert [c["name"] for c in data["calls"]] == ["GetWeatherArgs", "get_stock_price"]


def test_replay_prints_a_readable_summary(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "replay", "bundled:llama_cpp_write_cut_at_max_tokens")
    assert code == 0
    assert "stop reason: length (provider said: tool_calls)" in out
    assert "evidence: server_profile, arguments_unterminated, cut by: token_limit" in out
    assert "cut off at the output-token limit" in out


def test_replay_with_tools_judges_against_them(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps([{"name": "other", "input_schema": {"type": "object"}}]))
    code, out, _ = run(capsys, "replay", str(PARALLEL), "--json", "--tools", str(tools))
    assert code == 0
    reasons = [c["reason"] for c in json.loads(out)["calls"]]
    assert reasons == ["unknown_tool", "unknown_tool"]


@pytest.mark.parametrize(
    ("argv", "code", "message"),
    [
        (("replay", "/nonexistent/file.sse"), 1, "cannot read /nonexistent/file.sse"),
        (("replay", "bundled:nope"), 1, "no bundled recording 'nope'"),
        (("replay", "x", "--max-tokens", "0"), 2, "must be a positive integer"),
        (("replay", "x", "--provider", "nope"), 2, "invalid choice"),
        (("replay",), 2, "required: FILE"),
        (("frobnicate",), 2, "invalid choice"),
    ],
)
def test_replay_errors_are_one_line_with_the_right_code(
    capsys: pytest.CaptureFixture[str], argv: tuple[str, ...], code: int, message: str
) -> None:
    got, _, err = run(capsys, *argv)
    assert got == code
    assert message in err
    assert "Traceback" not in err


def test_replay_of_a_file_that_is_not_a_stream_fails(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    junk = tmp_path / "junk.sse"
    junk.write_bytes(b"data: this is not json\n\n")
    code, _, err = run(capsys, "replay", str(junk))
    assert code == 1
    assert "is not a readable openai-chat stream" in err


def test_check_one_string(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "check", "--tool", "read", stdin='{path: "a"}\n')
    assert code == 0
    assert json.loads(out) == {
        "outcome": "repaired",
        "arguments": {"path": "a"},
        "repairs": ["bare_keys"],
        "reason": None,
        "message": None,
    }


def test_check_strict_turns_repairs_off(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "check", "--tool", "read", "--strict", stdin='{path: "a"}')
    verdict = json.loads(out)
    assert code == 0
    assert (verdict["outcome"], verdict["reason"]) == ("rejected", "not_json")
    assert "`read`" in verdict["message"]


def test_check_with_a_schema_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps({"type": "object", "required": ["path"]}))
    code, out, _ = run(capsys, "check", "--tool", "read", "--schema", str(schema), stdin="{}")
    verdict = json.loads(out)
    assert (code, verdict["reason"]) == (0, "schema")
    assert 'missing required property "path"' in verdict["message"]


def test_check_jsonl_keeps_order_and_reports_bad_lines(
    capsys: pytest.CaptureFixture[str],
) -> None:
    lines = "\n".join(
        [
            json.dumps({"raw": '{"a": 1}', "tool": "t"}),
            "not json",
            json.dumps({"raw": '{"a":', "tool": "t"}),
            json.dumps({"raw": "{}", "tool": "t", "schema": {"type": "object", "required": ["x"]}}),
        ]
    )
    code, out, _ = run(capsys, "check", "--jsonl", stdin=lines)
    rows = [json.loads(line) for line in out.splitlines()]
    assert code == 1
    assert len(rows) == 4
    assert rows[0]["outcome"] == "ok"
    assert rows[1] == {"error": rows[1]["error"]}
    assert rows[1]["error"].startswith("line 2:")
    assert rows[2]["reason"] == "truncated"
    assert rows[3]["reason"] == "schema"


def test_check_needs_a_tool(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "check", stdin="{}")
    assert code == 2
    assert "--tool" in err


def test_check_with_a_missing_schema_file(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "check", "--tool", "t", "--schema", "/nonexistent.json", stdin="{}")
    assert code == 1
    assert "cannot read /nonexistent.json" in err


def test_the_installed_command_runs() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "toolwire.cli", "replay", str(CUT_12), "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["truncated"] is True


#: Text and arguments no ASCII output can hold: an accent, a BMP symbol and an astral emoji.
CAFE = "café ☕"
NAIVE = {"text": "naïve 😀"}


def _chunk(delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish_reason}
    payload = json.dumps({"id": "x", "model": "m", "choices": [choice]}, ensure_ascii=False)
    return b"data: " + payload.encode() + b"\n\n"


def _non_ascii_recording(tmp_path: Path) -> Path:
    """A Chat recording whose text and tool-call arguments are non-ASCII UTF-8 bytes."""
    call = {
        "index": 0,
        "id": "c1",
        "type": "function",
        "function": {"name": "write", "arguments": json.dumps(NAIVE, ensure_ascii=False)},
    }
    body = (
        _chunk({"content": CAFE})
        + _chunk({"tool_calls": [call]})
        + _chunk({}, "tool_calls")
        + b"data: [DONE]\n\n"
    )
    path = tmp_path / "non_ascii.sse"
    path.write_bytes(body)
    return path


def run_with_ascii_output(*argv: str, stdin: bytes = b"") -> tuple[int, str, str]:
    """Run the installed command with ASCII stdout and stderr; both must be ASCII bytes."""
    result = subprocess.run(
        [sys.executable, "-m", "toolwire.cli", *argv],
        input=stdin,
        capture_output=True,
        env={**os.environ, "PYTHONIOENCODING": "ascii"},
        check=False,
    )
    return result.returncode, result.stdout.decode("ascii"), result.stderr.decode("ascii")


def test_replay_summary_on_an_ascii_output_escapes_instead_of_failing(tmp_path: Path) -> None:
    code, out, err = run_with_ascii_output("replay", str(_non_ascii_recording(tmp_path)))
    assert (code, err) == (0, "")
    assert 'text: "caf\\u00e9 \\u2615"' in out
    assert 'raw arguments: "{\\"text\\": \\"na\\u00efve \\ud83d\\ude00\\"}"' in out


def test_replay_json_on_an_ascii_output_is_json_of_the_exact_text(tmp_path: Path) -> None:
    code, out, err = run_with_ascii_output("replay", str(_non_ascii_recording(tmp_path)), "--json")
    assert (code, err) == (0, "")
    data = json.loads(out)
    assert data["text"] == CAFE
    assert [(call["arguments"], call["outcome"]) for call in data["calls"]] == [(NAIVE, "ok")]


def test_check_on_an_ascii_output_is_json_of_the_exact_arguments() -> None:
    raw = json.dumps(NAIVE, ensure_ascii=False).encode()
    code, out, err = run_with_ascii_output("check", "--tool", "write", stdin=raw)
    assert (code, err) == (0, "")
    assert json.loads(out)["arguments"] == NAIVE


@pytest.mark.parametrize(
    "body",
    [b"<html><body><h1>502 Bad Gateway</h1></body></html>", b'{"error": {"message": "no"}}', b""],
)
def test_replay_of_a_body_that_is_no_stream_exits_1(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, body: bytes
) -> None:
    path = tmp_path / "body.sse"
    path.write_bytes(body)
    code, out, err = run(capsys, "replay", str(path))
    assert (code, out) == (1, "")
    assert "is not a readable openai-chat stream" in err
    assert "truncated" not in err
    assert len(err.strip().splitlines()) == 1
