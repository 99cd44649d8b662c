"""Hostile input always gives a verdict: never an exception, never a RecursionError."""

from __future__ import annotations

import pytest

from toolwire.judge import DEFAULT_POLICY, Policy, parse_arguments


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("\ud800", "not_json"),
        ('{"a": "\udfff"}', "not_json"),
        ("{\x00}", "not_json"),
        ("\x00", "not_json"),
        ("[" * 100_000, "truncated"),
        ("{" * 100_000, "truncated"),
        ('{"a":' * 100_000, "truncated"),
        ("[" * 100_000 + "]" * 100_000, "wrong_type"),
        ("{" * 100_000 + "}" * 100_000, "not_json"),
        ('{"a":' * 5000 + "1" + "}" * 5000, "not_json"),
        ("x" * 2_000_000, "too_large"),
        ("{" + '"a": 1, ' * 500_000 + "}", "too_large"),
    ],
    ids=lambda value: repr(value)[:20],
)
def test_hostile_input(raw: str, reason: str) -> None:
    verdict = parse_arguments(raw, tool="t")
    assert (verdict.outcome, verdict.reason) == ("rejected", reason)
    assert verdict.message is not None
    verdict.message.encode("utf-8")  # safe to send: surrogates replaced


def test_ten_megabytes() -> None:
    raw = '{"a": "' + "x" * 10_000_000 + '"}'
    verdict = parse_arguments(raw, tool="t")
    assert verdict.reason == "too_large"
    big = parse_arguments(raw, tool="t", policy=Policy(max_bytes=20_000_000))
    assert big.outcome == "ok"


def test_size_limit_counts_utf8_bytes() -> None:
    policy = Policy(max_bytes=10)
    assert parse_arguments('{"a":"é"}', tool="t", policy=policy).outcome == "ok"  # 10 bytes
    assert parse_arguments('{"a":"éé"}', tool="t", policy=policy).reason == "too_large"
    assert DEFAULT_POLICY.max_bytes == 1_048_576


def test_nul_inside_a_string_is_a_control_char() -> None:
    verdict = parse_arguments('{"a": "x\x00y"}', tool="t")
    assert (verdict.arguments, verdict.repairs) == ({"a": "x\x00y"}, ("control_chars",))


def test_truncated_flag() -> None:
    ok = parse_arguments('{"a": 1}', tool="t", truncated=True)
    assert (ok.outcome, ok.truncated) == ("ok", True)
    bad = parse_arguments('{"a": 1]', tool="t", truncated=True)
    assert (bad.reason, bad.truncated) == ("truncated", True)
    cut = parse_arguments('{"a": "x', tool="t", truncated=False)
    assert (cut.reason, cut.truncated) == ("truncated", True)
    assert parse_arguments('{"a": 1]', tool="t").reason == "not_json"
