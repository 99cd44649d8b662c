"""ByteDance Seed-OSS calls (``seed-oss``).

Cases written from the chat template llama.cpp keeps (``models/templates/ByteDance-Seed-OSS.jinja``:
each call in its own ``<seed:tool_call>`` block, ``<function=NAME>`` and ``<parameter=KEY>``
lines, the tool prompt's multi-line example value, ``<seed:eos>`` after the calls) and vLLM's
parser source (``vllm/tool_parsers/seed_oss_tool_parser.py``, "adapted from qwen3coder": one
line feed at either end of a value is the markup's, an open parameter is closed by the next tag).
"""

from __future__ import annotations

from ._family_contract import FamilyContract, runnable


def call(name: str, *parameters: tuple[str, str]) -> str:
    """One call as the template writes it."""
    body = "".join(f"<parameter={key}>{value}</parameter>\n" for key, value in parameters)
    return f"<seed:tool_call>\n<function={name}>\n{body}</function>\n</seed:tool_call>"


ROME = call("get_weather", ("city", "Rome"), ("on", "true"))
MULTILINE = call(
    "get_weather",
    ("note", "This is the value for the second parameter\nthat can span\nmultiple lines"),
    ("n", "12"),
)


class TestSeedOss(FamilyContract):
    family = "seed-oss"
    calls = (
        (ROME, [("get_weather", {"city": "Rome", "on": True})]),
        (
            MULTILINE,
            [
                (
                    "get_weather",
                    {
                        "note": "This is the value for the second parameter\nthat can span\n"
                        "multiple lines",
                        "n": 12,
                    },
                )
            ],
        ),
        # Content, then a block per call (the template's assistant turn), then <seed:eos>.
        (
            "Let me check both.\n" + ROME + "\n" + call("get_time") + "<seed:eos>",
            [("get_weather", {"city": "Rome", "on": True}), ("get_time", {})],
        ),
        # An open parameter is closed by the next tag (Qwen's rule, which Seed's parser shares).
        (
            "<seed:tool_call>\n<function=get_weather>\n<parameter=city>\nRome\n"
            "<parameter=n>\n2\n</parameter>\n</function>\n</seed:tool_call>",
            [("get_weather", {"city": "Rome", "n": 2})],
        ),
    )
    not_calls = (
        call("delete_everything", ("city", "Rome")),
        "Reply with " + ROME + " when you need the weather.",
        "```xml\n" + ROME + "\n```",
        # A call whose block never closes, followed by prose, is no call.
        "<seed:tool_call>\n<function=get_time>\n</function>\nthen I stopped.",
        call("get_weather", ("city", "A"), ("city", "B")),
    )
    cut_texts = (
        ROME,
        MULTILINE,
    )


def test_a_call_without_the_seed_wrapper_is_qwen3_coder() -> None:
    """``<function=`` alone is Qwen3-Coder's row (same inside, no Seed wrapper)."""
    from ._family_contract import TOOLS
    from ._harness import run_text

    text = "<function=get_time>\n<parameter=n>\n1\n</parameter>\n</function>"
    turn, _ = run_text([text], TOOLS)
    assert [(c.name, c.arguments, c.text_family) for c in turn.runnable] == [
        ("get_time", {"n": 1}, "qwen3-coder")
    ]
    assert runnable(text, families=["seed-oss"]) == []
