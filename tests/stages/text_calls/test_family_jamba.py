"""Jamba, Apriel, Hunyuan-A13B: ``<tool_calls>[{...}]</tool_calls>``.

Apriel-1.6-15b-Thinker-fixed.jinja and unsloth-Apriel-1.5.jinja (llama.cpp ``models/templates``)
render ``\n<tool_calls>[{"name": ..., "arguments": ...}, ...]</tool_calls>`` and end the turn
with ``\n<|end|>\n``; vLLM ``tool_parsers/jamba_tool_parser.py`` and
``hunyuan_a13b_tool_parser.py`` read the same list between the same tags.
"""

from __future__ import annotations

from ._family_contract import FamilyContract

ONE = [("get_weather", {"city": "Paris"})]
TWO = [("get_weather", {"city": "Paris"}), ("get_time", {"n": 2})]


class TestJamba(FamilyContract):
    family = "jamba"
    calls = (
        (
            '<tool_calls>[{"name": "get_weather", "arguments": {"city": "Paris"}}]</tool_calls>',
            ONE,
        ),
        (
            '\n<tool_calls>[{"name": "get_weather", "arguments": {"city": "Paris"}}, '
            '{"name": "get_time", "arguments": {"n": 2}}]</tool_calls>\n<|end|>\n',
            TWO,
        ),
        (
            'I will check.\n<tool_calls>[{"name": "get_weather", "arguments": '
            '{"city": "Paris"}, "id": "call_0"}]</tool_calls>',
            ONE,
        ),
    )
    not_calls = (
        '<tool_calls>[{"name": "delete_everything", "arguments": {}}]</tool_calls>',
        'Return <tool_calls>[{"name": "get_weather", "arguments": {}}]</tool_calls> first.',
        # A list of objects that are no calls. (One call object in these tags is MiniMax-M1's
        # format, test_family_minimax_m1.py.)
        '<tool_calls>[{"name": "Alice", "age": 30}]</tool_calls>',
    )
    cut_texts = (
        '<tool_calls>[{"name": "get_weather", "arguments": {"city": "Paris"}}]</tool_calls>',
    )
