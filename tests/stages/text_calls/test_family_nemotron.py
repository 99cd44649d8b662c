"""Nemotron Nano v2: ``<TOOLCALL>[{...}]</TOOLCALL>``, then ``<SPECIAL_12>``.

NVIDIA-Nemotron-Nano-v2.jinja (llama.cpp ``models/templates``) renders
``<TOOLCALL>[{"name": ..., "arguments": ...}, ...]</TOOLCALL>`` and ends the turn with
``\n<SPECIAL_12>\n``; llama.cpp reads it by its Nemotron Nano v2 patch
(``common/chat-diff-analyzer.cpp``); vLLM ``tool_parsers/nemotron_json_tool_parser.py`` also
reads one bare object inside the tags.
"""

from __future__ import annotations

from ._family_contract import FamilyContract

ONE = [("get_weather", {"city": "Paris"})]
TWO = [("get_weather", {"city": "Paris"}), ("get_time", {"n": 2})]


class TestNemotron(FamilyContract):
    family = "nemotron"
    calls = (
        ('<TOOLCALL>[{"name": "get_weather", "arguments": {"city": "Paris"}}]</TOOLCALL>', ONE),
        (
            '<TOOLCALL>[{"name": "get_weather", "arguments": {"city": "Paris"}}, '
            '{"name": "get_time", "arguments": {"n": 2}}]</TOOLCALL>\n<SPECIAL_12>\n',
            TWO,
        ),
        (
            'Sure.\n<TOOLCALL>{"name": "get_weather", "arguments": {"city": "Paris"}}</TOOLCALL>',
            ONE,
        ),
    )
    not_calls = (
        '<TOOLCALL>[{"name": "delete_everything", "arguments": {}}]</TOOLCALL>',
        'Answer with <TOOLCALL>[{"name": "get_weather", "arguments": {}}]</TOOLCALL> here.',
        '```\n<TOOLCALL>[{"name": "get_weather", "arguments": {"city": "Paris"}}]</TOOLCALL>\n```',
        # A tool result, not a call.
        '<TOOL_RESPONSE>[{"temperature": 21}]</TOOL_RESPONSE>',
    )
    cut_texts = ('<TOOLCALL>[{"name": "get_weather", "arguments": {"city": "Paris"}}]</TOOLCALL>',)
