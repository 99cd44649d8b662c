"""dots: XML invokes, or one JSON call object, in ``<dots_function_call>`` (``dots``).

Written from vLLM's parser source (``vllm/tool_parsers/dots_tool_parser.py``: "The canonical
body contains one or more ``invoke`` elements ... A JSON object with ``name`` and ``arguments``
is also accepted as a fallback. Multiple wrapper blocks and multiple invokes per block are
supported"; a value's blanks are stripped) and SGLang's (``function_call/dots_detector.py``,
the same format). The XML form is a row of ``xml_families.py``, the JSON form one of
``families.py``.
"""

from __future__ import annotations

from ._family_contract import FamilyContract


def invoke(name: str, *parameters: tuple[str, str]) -> str:
    body = "".join(f'<parameter name="{key}">{value}</parameter>\n' for key, value in parameters)
    return f'<invoke name="{name}">\n{body}</invoke>\n'


def block(*invokes: str) -> str:
    return "<dots_function_call>\n" + "".join(invokes) + "</dots_function_call>"


WEATHER = block(invoke("get_weather", ("city", "Shanghai")))
JSON_BLOCK = (
    '<dots_function_call>\n{"name": "get_weather", "arguments": {"city": "Shanghai"}}\n'
    "</dots_function_call>"
)
SHANGHAI = [("get_weather", {"city": "Shanghai"})]


class TestDots(FamilyContract):
    family = "dots"
    calls = (
        (WEATHER, SHANGHAI),
        # Two invokes in one block, a value with blanks around it, a typed value.
        (
            block(invoke("get_weather", ("city", " Shanghai ")), invoke("get_time", ("n", "2"))),
            [("get_weather", {"city": "Shanghai"}), ("get_time", {"n": 2})],
        ),
        # Two blocks, text before them.
        (
            "Let me look.\n" + WEATHER + "\n" + block(invoke("get_time")),
            [("get_weather", {"city": "Shanghai"}), ("get_time", {})],
        ),
        (JSON_BLOCK, SHANGHAI),
    )
    not_calls = (
        block(invoke("delete_everything")),
        '<dots_function_call>\n{"name": "delete_everything", "arguments": {}}\n'
        "</dots_function_call>",
        "The model writes " + WEATHER + " to call a tool.",
        # A block that is not wholly calls.
        "<dots_function_call>\n" + invoke("get_weather", ("city", "A")) + "note\n"
        "</dots_function_call>",
    )
    cut_texts = (WEATHER, JSON_BLOCK)
