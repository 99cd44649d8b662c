"""LongCat-Flash: Hermes's JSON in ``<longcat_tool_call>`` tags.

vLLM ``tool_parsers/longcat_tool_parser.py`` is the Hermes parser with
``<longcat_tool_call>`` ... ``</longcat_tool_call>``.
"""

from __future__ import annotations

from ._family_contract import FamilyContract

ONE = [("get_weather", {"city": "Paris"})]
TWO = [("get_weather", {"city": "Paris"}), ("get_time", {"n": 2})]


class TestLongCat(FamilyContract):
    family = "longcat"
    calls = (
        (
            '<longcat_tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}'
            "</longcat_tool_call>",
            ONE,
        ),
        (
            '<longcat_tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}'
            '</longcat_tool_call>\n<longcat_tool_call>{"name": "get_time", "arguments": '
            '{"n": 2}}</longcat_tool_call>',
            TWO,
        ),
        (
            'Let me see.\n<longcat_tool_call>\n{"name": "get_weather", "arguments": '
            '{"city": "Paris"}}\n</longcat_tool_call>',
            ONE,
        ),
    )
    not_calls = (
        '<longcat_tool_call>{"name": "delete_everything", "arguments": {}}</longcat_tool_call>',
        'LongCat wraps calls: <longcat_tool_call>{"name": "get_weather", "arguments": {}}'
        "</longcat_tool_call> and goes on.",
        # A closing tag inside a string is text of the string: the block never closes here.
        '<longcat_tool_call>{"name": "get_weather", "arguments": {"city": '
        '"</longcat_tool_call>"}} then prose',
    )
    cut_texts = (
        '<longcat_tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}'
        "</longcat_tool_call>",
    )
