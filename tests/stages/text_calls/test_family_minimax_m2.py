"""MiniMax M2 calls (``minimax-m2``).

Cases written from the chat template llama.cpp keeps (``models/templates/MiniMax-M2.jinja``:
``<minimax:tool_call>`` around every ``<invoke name="...">`` of the turn, a
``<parameter name="...">`` a key, non-string values with ``tojson``, reasoning in ``<think>``
before the content, ``[e~[`` to end the turn) and the parsers' source (vLLM
``vllm/tool_parsers/minimax_m2_tool_parser.py``, SGLang
``python/sglang/srt/function_call/minimax_m2.py``: line feeds at a value's ends are the
markup's, values typed by the tool's schema).
"""

from __future__ import annotations

from ._family_contract import FamilyContract


def invoke(name: str, *parameters: tuple[str, str]) -> str:
    body = "".join(f'<parameter name="{key}">{value}</parameter>\n' for key, value in parameters)
    return f'<invoke name="{name}">\n{body}</invoke>\n'


def block(*invokes: str) -> str:
    return "<minimax:tool_call>\n" + "".join(invokes) + "</minimax:tool_call>"


PARIS = block(invoke("get_weather", ("city", "Paris")))
BOTH = block(
    invoke("get_weather", ("city", "\nSan Francisco\n"), ("tags", '["fog"]'), ("n", "2")),
    invoke("get_time", ("opts", '{"tz": "PST"}')),
)


class TestMiniMaxM2(FamilyContract):
    family = "minimax-m2"
    calls = (
        (PARIS, [("get_weather", {"city": "Paris"})]),
        (
            BOTH,
            [
                ("get_weather", {"city": "San Francisco", "tags": ["fog"], "n": 2}),
                ("get_time", {"opts": {"tz": "PST"}}),
            ],
        ),
        # Reasoning, content, then the block and the end of turn (the template's turn).
        (
            "<think>\nThe user wants the weather.\n</think>\n\nChecking now.\n" + PARIS + "[e~[",
            [("get_weather", {"city": "Paris"})],
        ),
        (
            PARIS + "\n" + block(invoke("get_time")),
            [("get_weather", {"city": "Paris"}), ("get_time", {})],
        ),
        # A string's own spaces are kept (only line feeds at its ends are the markup's).
        (
            block(invoke("get_weather", ("note", "  indented"))),
            [("get_weather", {"note": "  indented"})],
        ),
    )
    not_calls = (
        block(invoke("delete_everything", ("city", "Paris"))),
        block(invoke("get_time"), invoke("delete_everything")),
        "To call a tool, write " + PARIS + " in your reply.",
        "`" + PARIS + "`",
        "<think>\n" + PARIS + "\n</think>\nI don't need a tool.",
        block(invoke("get_weather", ("city", "A"), ("city", "B"))),
        # A parameter whose close is missing before the call's close is not the grammar.
        '<minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="city">Paris\n'
        "</invoke>\n</minimax:tool_call>",
    )
    cut_texts = (
        PARIS,
        BOTH,
    )
