"""DeepSeek V4.1: V4's DSML with a space after the bars (``deepseek-dsml``).

Written from vLLM's parser source (``vllm/parser/deepseek_v41.py``: ``<|DSML| calls>``, V4's
``<|DSML| tool_calls>`` spelled the same way, ``<|DSML| invoke name="N">``,
``<|DSML| parameter ...>``) and SGLang's (``function_call/deepseekv41_detector.py``: "The
leading space in each tag name below is intentional, not a typo"). The bars are U+FF5C;
``string="false"`` says JSON, as in V3.2 and V4.
"""

from __future__ import annotations

from ._family_contract import FamilyContract

D = "\uff5cDSML\uff5c "


def parameter(key: str, value: str, *, string: bool = True) -> str:
    return f'<{D}parameter name="{key}" string="{str(string).lower()}">{value}</{D}parameter>\n'


def block(name: str, *parameters: str, wrapper: str = "calls") -> str:
    return (
        f'<{D}{wrapper}>\n<{D}invoke name="{name}">\n'
        + "".join(parameters)
        + f"</{D}invoke>\n</{D}{wrapper}>"
    )


PARIS = block("get_weather", parameter("city", "Paris"))
ONE = [("get_weather", {"city": "Paris"})]


class TestDeepSeekV41(FamilyContract):
    family = "deepseek-dsml"
    calls = (
        (PARIS, ONE),
        (
            block("get_weather", parameter("n", "2", string=False), wrapper="tool_calls"),
            [("get_weather", {"n": 2})],
        ),
        ("Checking.\n\n" + PARIS + "<\uff5cend\u2581of\u2581sentence\uff5c>", ONE),
    )
    not_calls = (
        block("delete_everything"),
        "Write " + PARIS + " for the weather.",
    )
    cut_texts = (PARIS,)
