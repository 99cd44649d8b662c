"""stream_fragments.jsonl with the judge on: each call's verdict is the vector's outcome.

Depends on the judge stage (``toolwire.collect(..., judge=True)``); everything judge-free about
these vectors is in ``tests/adapters/test_accumulate.py``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from _toolwire_testdata import chat_chunk, load_vectors, sse_body

import toolwire

pytestmark = pytest.mark.anyio

VECTORS = load_vectors("stream_fragments.jsonl")
OUTCOMES = {"ok": "ok", "repair": "repaired", "reject": "rejected"}


def strict(value: Any) -> str:
    """A type-strict form for comparison (``True`` is not ``1``, ``1.0`` is not ``1``)."""
    return json.dumps(value, sort_keys=True)


@pytest.mark.parametrize("vector", VECTORS, ids=[v["id"] for v in VECTORS])
async def test_vector_verdicts(vector: dict[str, Any]) -> None:
    chunks: list[dict[str, Any] | bytes | str] = [
        chat_chunk({"tool_calls": [fragment]}) for fragment in vector["tool_call_fragments"]
    ]
    chunks.append(chat_chunk({}, vector["finish_reason"]))
    turn = await toolwire.collect(sse_body(chunks), judge=True)
    expected_calls = vector["expected_calls"]
    assert len(turn.calls) == len(expected_calls)
    for call, expected in zip(turn.calls, expected_calls, strict=True):
        if expected["id"] is not None:
            assert call.call_id == expected["id"]
        assert call.name == expected["name"]
        verdict = call.verdict
        assert verdict is not None
        if expected["outcome"] == "ok" and call.arguments_raw == "":
            # S2: this file calls empty arguments "ok"; tool_args.jsonl (the policy's own
            # vectors, P10) calls the same text a repair of kind `empty`. Both agree that it runs
            # with {}; the judge follows the policy, so here only the kind may be reported.
            assert verdict.outcome == "repaired"
            assert verdict.repairs == ("empty",)
            assert verdict.arguments == expected["args"]
            continue
        assert verdict.outcome == OUTCOMES[expected["outcome"]]
        if verdict.outcome == "rejected":
            assert verdict.arguments is None
            assert verdict.reason == expected["reject_category"]
            assert call.may_run is False
        else:
            assert verdict.arguments is not None
            assert strict(verdict.arguments) == strict(expected["args"])
            assert set(verdict.repairs) == set(expected.get("repairs", []))
            assert call.may_run is True
    # A rejected call is data, never an exception, and the stream still ends normally.
    assert turn.errors == ()
