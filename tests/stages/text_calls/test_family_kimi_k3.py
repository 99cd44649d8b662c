"""Kimi K3 XTML calls (``kimi-k3``); not Kimi K2's token sections (``kimi``).

Cases written from the chat template llama.cpp keeps (``models/templates/Kimi-K3.jinja``: the
``open_tag`` / ``close_tag`` macros, ``call tool="..." index="N"`` from 1, ``argument key=...
type=...`` with ``string`` values raw and every other type ``tojson``, the tools after the
response channel, then ``<|close|>message<|sep|><|end_of_msg|>``) and the parsers' source
(llama.cpp ``common/parsers/kimi-k3.cpp``, vLLM ``vllm/tool_parsers/kimi_k3_tool_parser.py``).
"""

from __future__ import annotations

from ._family_contract import FamilyContract, runnable

TOOLS_OPEN, TOOLS_CLOSE = "<|open|>tools<|sep|>", "<|close|>tools<|sep|>"
END = "<|close|>message<|sep|><|end_of_msg|>"


def call(name: str, index: int, *arguments: tuple[str, str, str]) -> str:
    body = "".join(
        f'<|open|>argument key="{key}" type="{kind}"<|sep|>{value}<|close|>argument<|sep|>'
        for key, kind, value in arguments
    )
    return f'<|open|>call tool="{name}" index="{index}"<|sep|>{body}<|close|>call<|sep|>'


OSLO = TOOLS_OPEN + call("get_weather", 1, ("city", "string", "Oslo")) + TOOLS_CLOSE
TYPED = (
    TOOLS_OPEN
    + call(
        "get_weather",
        1,
        ("city", "string", " Oslo, Norway "),
        ("n", "number", "4"),
        ("on", "boolean", "false"),
        ("tags", "array", '["snow"]'),
        ("opts", "object", '{"unit":"c"}'),
    )
    + call("get_time", 2)
    + TOOLS_CLOSE
)


class TestKimiK3(FamilyContract):
    family = "kimi-k3"
    calls = (
        (OSLO, [("get_weather", {"city": "Oslo"})]),
        (
            TYPED,
            [
                (
                    "get_weather",
                    {
                        "city": " Oslo, Norway ",
                        "n": 4,
                        "on": False,
                        "tags": ["snow"],
                        "opts": {"unit": "c"},
                    },
                ),
                ("get_time", {}),
            ],
        ),
        # The response channel first, the tools after it, then the message's end.
        (
            "<|open|>response<|sep|>Checking.<|close|>response<|sep|>" + OSLO + END,
            [("get_weather", {"city": "Oslo"})],
        ),
    )
    not_calls = (
        TOOLS_OPEN + call("delete_everything", 1) + TOOLS_CLOSE,
        TOOLS_OPEN + call("get_time", 1) + call("delete_everything", 2) + TOOLS_CLOSE,
        "A call looks like " + OSLO + " in K3's format.",
        "```\n" + OSLO + "\n```",
        # Arguments as one JSON element (the template's form for arguments given as a string):
        # neither server reads it, toolwire neither.
        TOOLS_OPEN
        + '<|open|>call tool="get_time" index="1"<|sep|><|open|>json type="object"<|sep|>{"n": 1}'
        "<|close|>json<|sep|><|close|>call<|sep|>" + TOOLS_CLOSE,
        TOOLS_OPEN + call("get_time", 1, ("n", "number", "1"), ("n", "number", "2")) + TOOLS_CLOSE,
    )
    cut_texts = (
        OSLO,
        TYPED,
    )


def test_a_json_typed_value_that_is_not_json_stays_text() -> None:
    """``type="number"`` on ``four``: not JSON, so text typed by the schema (vLLM keeps it raw);
    the judge's schema check then rejects it, the call never runs."""
    text = TOOLS_OPEN + call("get_weather", 1, ("n", "number", "four")) + TOOLS_CLOSE
    assert runnable(text) == []
    from ._family_contract import TOOLS
    from ._harness import run_text

    turn, _ = run_text([text], TOOLS)
    assert [(c.name, c.arguments_raw) for c in turn.calls] == [("get_weather", '{"n":"four"}')]


def test_a_null_typed_value_is_null_and_the_schema_decides() -> None:
    """``type="null"`` is JSON ``null``; ``note`` is a string, so the judge rejects it."""
    from ._family_contract import TOOLS
    from ._harness import run_text

    text = TOOLS_OPEN + call("get_weather", 1, ("note", "null", "null")) + TOOLS_CLOSE
    turn, _ = run_text([text], TOOLS)
    assert [(c.name, c.arguments_raw, c.may_run) for c in turn.calls] == [
        ("get_weather", '{"note":null}', False)
    ]
