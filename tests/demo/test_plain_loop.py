"""What the plain ``json.loads(arguments or "{}") or {}`` loop does with a turn's calls."""

from __future__ import annotations

from typing import Any

import pytest

from toolwire.cli.demo.plain import plain_loop
from toolwire.core.turn import CallRecord
from toolwire.core.verdict import Verdict


def call(
    raw: str, outcome: str, arguments: dict[str, Any] | None = None, **more: Any
) -> CallRecord:
    verdict = Verdict(
        outcome=outcome,  # type: ignore[arg-type]
        arguments=arguments,
        reason=more.pop("reason", None),
        repairs=more.pop("repairs", ()),
    )
    return CallRecord(
        call_id="c", name="write", index=0, arguments_raw=raw, arguments=arguments,
        verdict=verdict, **more,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("record", "action"),
    [
        pytest.param(call('{"path": "a"}', "ok", {"path": "a"}), "ran_same", id="valid"),
        pytest.param(
            call('{"path": "a', "rejected", reason="truncated", truncated=True),
            "crashed",
            id="cut-not-json",
        ),
        pytest.param(
            call('{"path": "a"}', "rejected", reason="truncated", truncated=True),
            "ran_bad",
            id="cut-but-parses",
        ),
        pytest.param(call("", "rejected", reason="schema"), "ran_bad", id="empty-made-up"),
        pytest.param(call('{"path": 1}', "rejected", reason="schema"), "ran_bad", id="schema"),
        pytest.param(
            call('{"content": "a\nb"}', "repaired", {"content": "a\nb"},
                 repairs=("control_chars",)),
            "crashed",
            id="raw-newline-repaired",
        ),
        pytest.param(
            call('"{\\"a\\": 1}"', "repaired", {"a": 1}, repairs=("double_encoded",)),
            "crashed",
            id="double-encoded-is-no-object",
        ),
        pytest.param(
            call('{"arguments": {"a": 1}}', "repaired", {"a": 1}, repairs=("envelope",)),
            "ran_bad",
            id="envelope-parses-to-other-arguments",
        ),
    ],
)
def test_each_call_is_classified(record: CallRecord, action: str) -> None:
    (result,) = plain_loop([record])
    assert result.action == action, result.why


def test_a_crash_ends_the_turn() -> None:
    good = call('{"path": "a"}', "ok", {"path": "a"})
    bad = call('{"path": ', "rejected", reason="truncated", truncated=True)
    assert [r.action for r in plain_loop([good, bad, good])] == [
        "ran_same", "crashed", "not_reached",
    ]  # fmt: skip
