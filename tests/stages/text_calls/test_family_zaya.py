"""ZAYA1: Qwen3-Coder's XML calls in ``<zyphra_tool_call>`` (``zaya``).

Written from vLLM's parser source (``vllm/parser/zaya.py``: "ZAYA1 uses the Qwen3 grammar
(``<think>`` reasoning and XML tool calls) but wraps tool calls in ``<zyphra_tool_call>``
instead of ``<tool_call>``"; ``vllm/parser/qwen3.py`` for the grammar inside).
"""

from __future__ import annotations

from ._family_contract import FamilyContract


def call(name: str, *parameters: tuple[str, str]) -> str:
    body = "".join(f"<parameter={key}>\n{value}\n</parameter>\n" for key, value in parameters)
    return f"<zyphra_tool_call>\n<function={name}>\n{body}</function>\n</zyphra_tool_call>"


PARIS = call("get_weather", ("city", "Paris"))
ONE = [("get_weather", {"city": "Paris"})]


class TestZaya(FamilyContract):
    family = "zaya"
    calls = (
        (PARIS, ONE),
        (
            "<think>\nThe user wants two things.\n</think>\n\n"
            + PARIS
            + "\n"
            + call("get_time", ("n", "2")),
            [("get_weather", {"city": "Paris"}), ("get_time", {"n": 2})],
        ),
    )
    not_calls = (
        call("delete_everything"),
        "It writes " + PARIS + " when it needs the weather.",
        "<think>\n" + PARIS + "\n</think>\nIt is sunny in Paris.",
    )
    cut_texts = (PARIS,)
