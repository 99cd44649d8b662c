"""Llama 4: ``<|python_start|>`` a pythonic list (or Llama's JSON) ``<|python_end|>``.

vLLM ``tool_parsers/llama4_pythonic_tool_parser.py`` strips the two tokens around a list of
keyword calls (vllm#16214); the JSON form was read already (family ``llama``).
"""

from __future__ import annotations

from ._family_contract import FamilyContract

ONE = [("get_weather", {"city": "Paris"})]
TWO = [("get_weather", {"city": "Paris"}), ("get_time", {"n": 2})]


class TestLlama4(FamilyContract):
    family = "llama"
    calls = (
        ('<|python_start|>[get_weather(city="Paris")]<|python_end|>', ONE),
        ('<|python_start|>[get_weather(city="Paris"), get_time(n=2)]<|python_end|>', TWO),
        (
            '<|python_start|>{"name": "get_weather", "parameters": {"city": "Paris"}}'
            "<|python_end|>",
            ONE,
        ),
    )
    not_calls = (
        "<|python_start|>[delete_everything()]<|python_end|>",
        '<|python_start|>print("Paris")<|python_end|>',
        '<|python_start|>[get_weather("Paris")]<|python_end|>',
    )
    cut_texts = ('<|python_start|>[get_weather(city="Paris")]<|python_end|>',)
