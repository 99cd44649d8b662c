"""Command R7B, Command A, North: ``<|START_ACTION|>[{...}]<|END_ACTION|>``.

CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja and Cohere2MoE.jinja (llama.cpp
``models/templates``) render ``<|START_ACTION|>[{"tool_call_id": "0", "tool_name": ...,
"parameters": {...}}, ...]<|END_ACTION|><|END_OF_TURN_TOKEN|>``; llama.cpp
``common/parsers/cohere2moe.cpp``, SGLang ``function_call/cohere_command4_detector.py`` (which
reads one object too) and Ollama ``model/parsers/cohere.go`` read it.
"""

from __future__ import annotations

from ._family_contract import FamilyContract

ONE = [("get_weather", {"city": "Paris"})]
TWO = [("get_weather", {"city": "Paris"}), ("get_time", {"n": 2})]


class TestCohere(FamilyContract):
    family = "cohere"
    calls = (
        (
            '<|START_ACTION|>[\n    {"tool_call_id": "0", "tool_name": "get_weather", '
            '"parameters": {"city": "Paris"}}\n]<|END_ACTION|>',
            ONE,
        ),
        (
            '<|START_ACTION|>[\n    {"tool_call_id": "0", "tool_name": "get_weather", '
            '"parameters": {"city": "Paris"}},\n    {"tool_call_id": "1", "tool_name": '
            '"get_time", "parameters": {"n": 2}}\n]<|END_ACTION|><|END_OF_TURN_TOKEN|>',
            TWO,
        ),
        (
            'Looking it up.<|START_ACTION|>{"tool_name": "get_weather", "parameters": '
            '{"city": "Paris"}}<|END_ACTION|>',
            ONE,
        ),
    )
    not_calls = (
        '<|START_ACTION|>[{"tool_call_id": "0", "tool_name": "delete_everything", '
        '"parameters": {}}]<|END_ACTION|>',
        # A key no action has.
        '<|START_ACTION|>[{"tool_call_id": "0", "tool_name": "get_weather", "parameters": {}, '
        '"reason": "x"}]<|END_ACTION|>',
        # OpenAI's object is not this family's shape.
        '<|START_ACTION|>[{"name": "get_weather", "arguments": {}}]<|END_ACTION|>',
        'Write <|START_ACTION|>[{"tool_name": "get_weather", "parameters": {}}]<|END_ACTION|> '
        "to act.",
    )
    cut_texts = (
        '<|START_ACTION|>[{"tool_call_id": "0", "tool_name": "get_weather", "parameters": '
        '{"city": "Paris"}}]<|END_ACTION|>',
    )
