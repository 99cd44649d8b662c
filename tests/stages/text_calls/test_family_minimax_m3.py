"""MiniMax M3 calls (``minimax-m3``): nested XML values behind MiniMax's namespace token.

Cases written from the chat template llama.cpp keeps (``models/templates/MiniMax-M3.jinja``:
every tag after ``]<]minimax[>[``, a parameter named by its key, its ``to_xml`` macro writing an
object's members as elements, a list's entries as ``item`` elements, booleans with ``tojson``
and other scalars as they are, ``[e~[`` to end the turn) and the parsers' source (llama.cpp
``common/parsers/minimax-m3.cpp``: an empty list is no ``item``, typed by the schema; vLLM
``minimax_m3_tool_parser.py``).
"""

from __future__ import annotations

from typing import Any

from ._family_contract import TOOLS, FamilyContract
from ._harness import run_text

NS = "]<]minimax[>["


def element(key: str, content: str) -> str:
    return f"{NS}<{key}>{content}{NS}</{key}>"


def invoke(name: str, *members: str) -> str:
    return f'{NS}<invoke name="{name}">' + "".join(members) + f"{NS}</invoke>\n"


def block(*invokes: str) -> str:
    return f"{NS}<tool_call>\n" + "".join(invokes) + f"{NS}</tool_call>"


PARIS = block(invoke("get_weather", element("city", "Paris")))
NESTED = block(
    invoke(
        "get_weather",
        element("city", "Paris"),
        element("n", "3"),
        element("on", "true"),
        element("tags", element("item", "rain") + element("item", "wind")),
        element("opts", element("unit", "c") + element("days", element("item", "1"))),
    ),
    invoke("get_time"),
)


class TestMiniMaxM3(FamilyContract):
    family = "minimax-m3"
    calls = (
        (PARIS, [("get_weather", {"city": "Paris"})]),
        (
            NESTED,
            [
                (
                    "get_weather",
                    {
                        "city": "Paris",
                        "n": 3,
                        "on": True,
                        "tags": ["rain", "wind"],
                        "opts": {"unit": "c", "days": ["1"]},
                    },
                ),
                ("get_time", {}),
            ],
        ),
        # An empty list is written with no item (the schema says it is a list).
        (block(invoke("get_weather", element("tags", ""))), [("get_weather", {"tags": []})]),
        ("Let me check.\n" + PARIS + "[e~[", [("get_weather", {"city": "Paris"})]),
    )
    not_calls = (
        block(invoke("delete_everything")),
        block(invoke("get_time"), invoke("delete_everything")),
        "The format is " + PARIS + " as the prompt says.",
        "```\n" + PARIS + "\n```",
        # Text and elements mixed in one value.
        block(invoke("get_weather", element("opts", "unit" + element("item", "c")))),
        block(invoke("get_weather", element("city", "A") + element("city", "B"))),
    )
    cut_texts = (
        PARIS,
        NESTED,
    )


def test_elements_are_a_list_only_where_the_schema_or_the_items_say_so() -> None:
    """With no schema for ``opts``'s members, ``item`` elements are a list (the template's
    lists) and other elements an object."""
    schema: dict[str, Any] = {"type": "object", "properties": {}}
    tools = [{"type": "function", "function": {"name": "f", "parameters": schema}}]
    text = block(invoke("f", element("a", element("item", "1")), element("b", element("k", "v"))))
    turn, _ = run_text([text], tools)
    assert [(c.name, c.arguments) for c in turn.runnable] == [("f", {"a": ["1"], "b": {"k": "v"}})]


def test_nesting_past_the_limit_is_no_call() -> None:
    value = "x"
    for _ in range(40):
        value = element("k", value)
    turn, _ = run_text([block(invoke("get_weather", element("opts", value)))], TOOLS)
    assert turn.calls == ()
