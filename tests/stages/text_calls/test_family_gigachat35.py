"""GigaChat 3.5: "GCML" XML calls, DeepSeek's DSML spelled ``GCML`` (``gigachat35``).

Written from SGLang's parser source (``python/sglang/srt/function_call/gigachat35_detector.py``:
``<|GCML|tool_calls>`` around ``<|GCML|invoke name="N">`` calls, each parameter
``<|GCML|parameter name="K" string="true|false">V</|GCML|parameter>``, ``string="false"``
read as JSON; a trailing ``<|message_sep|>`` or ``</s>`` dropped). The bars are U+FF5C.
"""

from __future__ import annotations

from ._family_contract import FamilyContract

G = "\uff5cGCML\uff5c"


def parameter(key: str, value: str, *, string: bool = True) -> str:
    return f'<{G}parameter name="{key}" string="{str(string).lower()}">{value}</{G}parameter>\n'


def invoke(name: str, *parameters: str) -> str:
    return f'<{G}invoke name="{name}">\n' + "".join(parameters) + f"</{G}invoke>\n"


def block(*invokes: str) -> str:
    return f"<{G}tool_calls>\n" + "".join(invokes) + f"</{G}tool_calls>"


PARIS = block(invoke("get_weather", parameter("city", "Paris")))
ONE = [("get_weather", {"city": "Paris"})]


class TestGigaChat35(FamilyContract):
    family = "gigachat35"
    calls = (
        (PARIS, ONE),
        # string="false": JSON; two calls; GigaChat's end of turn after the block.
        (
            "Сейчас проверю.\n"
            + block(
                invoke(
                    "get_weather", parameter("city", "Paris"), parameter("n", "3", string=False)
                ),
                invoke("get_time", parameter("tags", '["a", "b"]', string=False)),
            )
            + "<|message_sep|>",
            [("get_weather", {"city": "Paris", "n": 3}), ("get_time", {"tags": ["a", "b"]})],
        ),
    )
    not_calls = (
        block(invoke("delete_everything")),
        "The format is " + PARIS + " as shown.",
    )
    cut_texts = (PARIS,)
