"""``toolwire check`` with a schema that cannot be used: a one-line error, never a traceback.

(These test ``cli/check.py``; they sit with the judge tests because the schema checks they
cover are the judge's.)
"""

from __future__ import annotations

import io
import json
import sys
import time
from pathlib import Path

import pytest

from toolwire.cli import main

DANGLING = {"type": "object", "properties": {"a": {"$ref": "#/definitions/missing"}}}
REMOTE = {"$ref": "https://example.com/schema.json"}


def run(capsys: pytest.CaptureFixture[str], *argv: str, stdin: str) -> tuple[int, str, str]:
    sys.stdin = io.TextIOWrapper(io.BytesIO(stdin.encode()), encoding="utf-8")
    try:
        code = main(list(argv))
    except SystemExit as exit_:
        code = int(exit_.code or 0)
    finally:
        sys.stdin = sys.__stdin__
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    "schema", [DANGLING, REMOTE, {"type": 12}], ids=["dangling", "remote", "not a schema"]
)
def test_schema_file_that_cannot_be_used(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, schema: dict[str, object]
) -> None:
    path = tmp_path / "schema.json"
    path.write_text(json.dumps(schema))
    code, out, err = run(capsys, "check", "--tool", "read", "--schema", str(path), stdin="{}")
    assert (code, out) == (2, "")
    assert err.startswith(f"toolwire: {path}: the schema of tool 'read' ")
    assert err.count("\n") == 1
    assert "Traceback" not in err


def test_schema_file_is_checked_before_any_input_with_jsonl(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "schema.json"
    path.write_text(json.dumps(DANGLING))
    line = json.dumps({"raw": "{}", "tool": "t"})
    code, out, err = run(capsys, "check", "--jsonl", "--schema", str(path), stdin=line)
    assert (code, out) == (2, "")
    assert "points to nothing" in err


def test_jsonl_line_with_a_schema_that_cannot_be_used(capsys: pytest.CaptureFixture[str]) -> None:
    lines = "\n".join(
        json.dumps(line)
        for line in [
            {"raw": '{"a": 1}', "tool": "first", "schema": DANGLING},
            {"raw": '{"a": 1}', "tool": "second"},
            {"raw": "{}", "tool": "third", "schema": REMOTE},
            {"raw": "{}", "tool": "fourth", "schema": {"type": 12}},
        ]
    )
    code, out, _ = run(capsys, "check", "--jsonl", stdin=lines)
    rows = [json.loads(row) for row in out.splitlines()]
    assert code == 1
    assert len(rows) == 4
    assert list(rows[0]) == ["error"]
    assert rows[0]["error"].startswith("line 1: the schema of tool 'first' cannot be used")
    assert rows[1]["outcome"] == "ok"
    assert rows[2]["error"].startswith("line 3: the schema of tool 'third' cannot be used")
    assert rows[3]["error"].startswith("line 4: the schema of tool 'fourth' is not a valid")


def test_check_on_a_large_adversarial_input_is_fast(capsys: pytest.CaptureFixture[str]) -> None:
    start = time.process_time()
    code, out, _ = run(capsys, "check", "--tool", "t", stdin="x" + " " * 64_000 + "]\n")
    assert time.process_time() - start < 2.0  # was 34 s
    assert (code, json.loads(out)["reason"]) == (0, "not_json")
