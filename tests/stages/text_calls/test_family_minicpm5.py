"""MiniCPM5 (and MiniCPM4) calls (``minicpm5``).

Cases written from the chat template llama.cpp keeps
(``models/templates/openbmb-MiniCPM5-1B.jinja``:
``<function name="..."><param name="...">value</param></function>`` with no wrapper, a value
holding ``<``, ``&`` or a line feed written as CDATA, ``<|im_end|>`` after the turn) and the
parsers' source (llama.cpp ``common/parsers/minicpm5.cpp``: CDATA's inside is the value;
SGLang ``python/sglang/srt/function_call/minicpm4_xml_detector.py``: blanks around a value are
the markup's).
"""

from __future__ import annotations

from ._family_contract import FamilyContract


def call(name: str, *parameters: tuple[str, str]) -> str:
    body = "".join(f'<param name="{key}">{value}</param>' for key, value in parameters)
    return f'<function name="{name}">{body}</function>'


PARIS = call("get_weather", ("city", "Paris"), ("n", "3"))
CDATA = call("get_weather", ("note", "<![CDATA[if a < b && c:\n    print(</param>)]]>"))


class TestMiniCPM5(FamilyContract):
    family = "minicpm5"
    calls = (
        (PARIS, [("get_weather", {"city": "Paris", "n": 3})]),
        (CDATA, [("get_weather", {"note": "if a < b && c:\n    print(</param>)"})]),
        (
            "I'll look that up.\n" + PARIS + "<|im_end|>",
            [("get_weather", {"city": "Paris", "n": 3})],
        ),
        (
            PARIS + "\n" + call("get_time"),
            [("get_weather", {"city": "Paris", "n": 3}), ("get_time", {})],
        ),
        (call("get_weather", ("city", "  Paris \n")), [("get_weather", {"city": "Paris"})]),
        (call("get_weather", ("tags", '["a", "b"]')), [("get_weather", {"tags": ["a", "b"]})]),
    )
    not_calls = (
        call("delete_everything"),
        "Write " + PARIS + " to ask for the weather.",
        "```\n" + PARIS + "\n```",
        call("get_weather", ("city", "A"), ("city", "B")),
        # A value holding a call's opener without CDATA is not the grammar.
        call("get_weather", ("note", '<function name="get_time">')),
        # A param with no name.
        '<function name="get_weather"><param>Paris</param></function>',
    )
    cut_texts = (
        PARIS,
        CDATA,
    )
