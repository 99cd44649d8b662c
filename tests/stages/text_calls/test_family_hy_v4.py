"""Hunyuan HY V4: Hy3's key/value calls without ``<tool_sep>`` (``hy-v4``).

Written from vLLM's parser source (``vllm/tool_parsers/hy_v4_tool_parser.py``: the calls in
``<tool_calls>`` ... ``</tool_calls>``, each ``<tool_call>NAME<arg_key>K</arg_key>
<arg_value>V</arg_value></tool_call>``, the name "tool_call_body[:arg_start].strip()", a value
typed by the tool's schema). Hy3's form, with ``<tool_sep>`` after the name, is the
``hunyuan-hy3`` family; Jamba's and MiniMax-M1's JSON share the ``<tool_calls>`` opener.
"""

from __future__ import annotations

from ._family_contract import FamilyContract


def call(name: str, *pairs: tuple[str, str]) -> str:
    body = "".join(
        f"\n<arg_key>{key}</arg_key>\n<arg_value>{value}</arg_value>" for key, value in pairs
    )
    return f"<tool_call>{name}{body}\n</tool_call>"


def block(*calls: str) -> str:
    return "<tool_calls>\n" + "\n".join(calls) + "\n</tool_calls>"


PARIS = block(call("get_weather", ("city", "Paris")))
ONE = [("get_weather", {"city": "Paris"})]


class TestHyV4(FamilyContract):
    family = "hy-v4"
    calls = (
        (PARIS, ONE),
        (
            block(call("get_weather", ("city", "Paris")), call("get_time", ("n", "2"))),
            [("get_weather", {"city": "Paris"}), ("get_time", {"n": 2})],
        ),
        ("<tool_calls><tool_call>get_time</tool_call></tool_calls>", [("get_time", {})]),
    )
    not_calls = (
        block(call("delete_everything")),
        "The block " + PARIS + " calls a tool.",
        # Text inside the wrapper: the block is not wholly calls (and the <tool_call> inside
        # it, GLM's grammar, has text after it).
        "<tool_calls>" + call("get_weather", ("city", "Paris")) + "done</tool_calls>",
    )
    cut_texts = (PARIS,)
