"""GigaChat 3 / 3.1: one call after its role marker, last in the reply.

GigaChat3-10B-A1.8B.jinja (llama.cpp ``models/templates``) renders the call as a message of the
``function call`` role: ``<|message_sep|>\n\nfunction call<|role_sep|>\n{"name": ...,
"arguments": ...}``; GigaChat3.1-10B-A1.8B.jinja as ``<|function_call|>{...}``. llama.cpp
``common/parsers/gigachat-v3.cpp`` reads one call ("parallel toolcalls are not supported");
vLLM ``tool_parsers/gigachat3_tool_parser.py`` reads either marker and drops a trailing
``</s>``.
"""

from __future__ import annotations

from ._family_contract import FamilyContract

ONE = [("get_weather", {"city": "Paris"})]
TWO = [("get_weather", {"city": "Paris"}), ("get_time", {"n": 2})]


class TestGigaChat(FamilyContract):
    family = "gigachat"
    calls = (
        (
            '<|message_sep|>\n\nfunction call<|role_sep|>\n{"name": "get_weather", '
            '"arguments": {"city": "Paris"}}',
            ONE,
        ),
        ('<|function_call|>{"name": "get_weather", "arguments": {"city": "Paris"}}</s>', ONE),
        (
            "Checking the weather.<|message_sep|>\n\nfunction call<|role_sep|>\n"
            '{"name": "get_weather", "arguments": {"city": "Paris"}}<|message_sep|>\n\n',
            ONE,
        ),
    )
    not_calls = (
        '<|function_call|>{"name": "delete_everything", "arguments": {}}',
        "The reply ends with <|message_sep|>\n\nthen the next role speaks.",
        # A list: one call per reply in this family.
        '<|message_sep|>\n\nfunction call<|role_sep|>\n[{"name": "get_weather", '
        '"arguments": {"city": "Paris"}}]',
        '<|function_call|>{"name": "get_weather", "arguments": {}} is how it calls.',
    )
    cut_texts = (
        '<|function_call|>{"name": "get_weather", "arguments": {"city": "Paris"}}',
        '<|message_sep|>\n\nfunction call<|role_sep|>\n{"name": "get_weather", '
        '"arguments": {"city": "Paris"}}',
    )
