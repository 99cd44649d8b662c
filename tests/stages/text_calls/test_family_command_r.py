"""Command R / R+ (2024): ``Action:`` then a ```` ```json ```` fence holding a list of actions.

CohereForAI-c4ai-command-r-plus-tool_use.jinja (llama.cpp ``models/templates``) renders
``\nAction:\n```json\n[{"tool_name": ..., "parameters": {...}}]```\n``; Ollama
``model/parsers/commandr.go`` reads the fence after ``Action:`` (a list, or one object) and
skips the ``directly-answer`` pseudo-tool, which is never offered, so never a call here.
"""

from __future__ import annotations

from ._family_contract import FamilyContract

ONE = [("get_weather", {"city": "Paris"})]
TWO = [("get_weather", {"city": "Paris"}), ("get_time", {"n": 2})]


class TestCommandR(FamilyContract):
    family = "command-r"
    calls = (
        (
            'Action: ```json\n[\n    {\n        "tool_name": "get_weather",\n'
            '        "parameters": {"city": "Paris"}\n    }\n]\n```',
            ONE,
        ),
        (
            'Action:\n```json\n[\n    {"tool_name": "get_weather", "parameters": '
            '{"city": "Paris"}},\n    {"tool_name": "get_time", "parameters": {"n": 2}}\n]```',
            TWO,
        ),
        (
            'Plan: first look up the weather.\nAction: ```json\n{"tool_name": "get_weather", '
            '"parameters": {"city": "Paris"}}\n```',
            ONE,
        ),
    )
    not_calls = (
        'Action: ```json\n[{"tool_name": "directly-answer", "parameters": {}}]\n```',
        "Action: I will look the weather up for you.",
        # No "Action:": a JSON answer in a fence.
        '```json\n[{"tool_name": "get_weather", "parameters": {"city": "Paris"}}]\n```',
        'Action: ```json\n[{"tool_name": "get_weather", "parameters": {}}]\n``` is the format.',
    )
    cut_texts = (
        'Action: ```json\n[{"tool_name": "get_weather", "parameters": {"city": "Paris"}}]```',
    )
