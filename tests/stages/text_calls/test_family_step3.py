"""StepFun Step-3 calls (``step3``).

Cases written from the parsers' source (vLLM ``vllm/tool_parsers/step3_tool_parser.py`` and SGLang
``python/sglang/srt/function_call/step3_detector.py``, whose docstring gives the format: a
``<|tool_calls_begin|>`` section, each call ``<|tool_call_begin|>function<|tool_sep|>`` then a
``steptml:invoke`` element, ``<|tool_call_end|>``; both strip a value's blanks and type it by
the tool's schema). The ``|`` is U+FF5C and the words are joined by ``_``.
"""

from __future__ import annotations

from ._family_contract import FamilyContract

BEGIN, END = "<\uff5ctool_calls_begin\uff5c>", "<\uff5ctool_calls_end\uff5c>"
CALL, CALL_END, SEP = (
    "<\uff5ctool_call_begin\uff5c>",
    "<\uff5ctool_call_end\uff5c>",
    "<\uff5ctool_sep\uff5c>",
)


def call(name: str, *parameters: tuple[str, str], kind: str = "function") -> str:
    body = "".join(
        f'<steptml:parameter name="{key}">{value}</steptml:parameter>' for key, value in parameters
    )
    return f'{CALL}{kind}{SEP}<steptml:invoke name="{name}">{body}</steptml:invoke>{CALL_END}'


LYON = BEGIN + call("get_weather", ("city", " Lyon ")) + END
BOTH = BEGIN + call("get_weather", ("city", "Lyon"), ("n", "5")) + "\n" + call("get_time") + END


class TestStep3(FamilyContract):
    family = "step3"
    calls = (
        (LYON, [("get_weather", {"city": "Lyon"})]),
        (BOTH, [("get_weather", {"city": "Lyon", "n": 5}), ("get_time", {})]),
        ("I will check the weather first.\n" + LYON, [("get_weather", {"city": "Lyon"})]),
    )
    not_calls = (
        BEGIN + call("delete_everything") + END,
        # Only a call of type "function" is a call (both servers skip any other).
        BEGIN + call("get_time", kind="retrieval") + END,
        "The section " + LYON + " is how Step-3 calls tools.",
        "```\n" + LYON + "\n```",
    )
    cut_texts = (
        LYON,
        BOTH,
    )
