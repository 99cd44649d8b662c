"""Granite 3.0-3.3: ``<|tool_call|>`` then a JSON list of calls, no closing marker.

ibm-granite-granite-3.3-2B-Instruct.jinja (llama.cpp ``models/templates``): "respond only with
<|tool_call|> followed by a JSON list of tools used"; the turn ends with ``<|end_of_text|>``.
vLLM ``tool_parsers/granite_tool_parser.py`` reads ``[{"name", "arguments"}]`` after the token.
"""

from __future__ import annotations

from ._family_contract import FamilyContract

ONE = [("get_weather", {"city": "Paris"})]
TWO = [("get_weather", {"city": "Paris"}), ("get_time", {"n": 2})]


class TestGranite(FamilyContract):
    family = "granite"
    calls = (
        ('<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris"}}]', ONE),
        (
            '<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris"}}, '
            '{"name": "get_time", "arguments": {"n": 2}}]<|end_of_text|>',
            TWO,
        ),
        (
            'I will look it up.\n<|tool_call|>[{"name": "get_weather", "arguments": '
            '{"city": "Paris"}}]',
            ONE,
        ),
    )
    not_calls = (
        '<|tool_call|>[{"name": "delete_everything", "arguments": {}}]',
        # Quoted in prose: text follows the markup.
        'Granite answers <|tool_call|>[{"name": "get_weather", "arguments": {}}] to call.',
        '`<|tool_call|>[{"name": "get_weather", "arguments": {}}]`',
        # One object, not Granite's list (vLLM's parser requires the list).
        '<|tool_call|>{"name": "get_weather", "arguments": {"city": "Paris"}}',
    )
    cut_texts = ('<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris"}}]',)
