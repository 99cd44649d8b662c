"""Tencent Hunyuan Hy3 calls (``hunyuan-hy3``).

Cases written from the chat template llama.cpp keeps (``models/templates/tencent-Hy3.jinja``:
``HYTK = ':opensource'`` in every tag, ``<tool_calls>`` around the turn's calls, the name ended
by ``<tool_sep>``, ``<arg_key>`` / ``<arg_value>`` pairs with non-strings ``tojson``, then
``<|hy_eos:opensource|>``) and vLLM's parser source (``vllm/tool_parsers/hy_v3_tool_parser.py``,
which writes the same tags without the suffix and types values by the tool's schema).
"""

from __future__ import annotations

from ._family_contract import FamilyContract


def block(suffix: str, *calls: tuple[str, list[tuple[str, str]]]) -> str:
    def tag(name: str) -> str:
        return f"<{name}{suffix}>"

    text = tag("tool_calls") + "\n"
    for name, pairs in calls:
        text += tag("tool_call") + name + tag("tool_sep") + "\n"
        for key, value in pairs:
            text += f"{tag('arg_key')}{key}{tag('/arg_key')}\n{tag('arg_value')}{value}"
            text += tag("/arg_value") + "\n"
        text += tag("/tool_call") + "\n"
    return text + tag("/tool_calls")


OS = ":opensource"
NICE = block(OS, ("get_weather", [("city", "Nice"), ("n", "2")]))
PLAIN = block("", ("get_time", [("opts", '{"tz": "CET"}')]), ("get_weather", [("city", "Nice")]))


class TestHunyuanHy3(FamilyContract):
    family = "hunyuan-hy3"
    calls = (
        (NICE, [("get_weather", {"city": "Nice", "n": 2})]),
        (
            "Let me look that up. " + NICE + "<\uff5chy_eos:opensource\uff5c>",
            [("get_weather", {"city": "Nice", "n": 2})],
        ),
        (PLAIN, [("get_time", {"opts": {"tz": "CET"}}), ("get_weather", {"city": "Nice"})]),
    )
    not_calls = (
        block(OS, ("delete_everything", [])),
        "The tags " + NICE + " wrap a call.",
        "```\n" + PLAIN + "\n```",
        # Jamba / Hunyuan-A13B write JSON in <tool_calls>: not this grammar (and the name
        # is not offered here, so no family reads it).
        '<tool_calls>[{"name": "delete_everything", "arguments": {}}]</tool_calls>',
    )
    cut_texts = (
        NICE,
        PLAIN,
    )
