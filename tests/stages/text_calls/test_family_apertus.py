"""Apertus: ``<|tools_prefix|>[{"NAME": {args}}, ...]<|tools_suffix|>``.

Apertus-8B-Instruct.jinja (llama.cpp ``models/templates``) renders each call as a one-key object
``{"NAME": arguments}`` in a list between the two tokens; vLLM
``tool_parsers/apertus_tool_parser.py`` and Ollama ``model/parsers/apertus15.go`` (which refuses
an object with more than one key) read the list even when ``<|tools_suffix|>`` never came.
"""

from __future__ import annotations

from ._family_contract import FamilyContract

ONE = [("get_weather", {"city": "Paris"})]
TWO = [("get_weather", {"city": "Paris"}), ("get_time", {"n": 2})]


class TestApertus(FamilyContract):
    family = "apertus"
    calls = (
        ('<|tools_prefix|>[{"get_weather": {"city": "Paris"}}]<|tools_suffix|>', ONE),
        (
            '<|tools_prefix|>[{"get_weather": {"city": "Paris"}}, {"get_time": {"n": 2}}]'
            "<|tools_suffix|><|assistant_end|>",
            TWO,
        ),
        ('I will check. <|tools_prefix|>[{"get_weather": {"city": "Paris"}}]', ONE),
    )
    not_calls = (
        '<|tools_prefix|>[{"delete_everything": {}}]<|tools_suffix|>',
        # Two names in one object: no single reading.
        '<|tools_prefix|>[{"get_weather": {"city": "Paris"}, "get_time": {}}]<|tools_suffix|>',
        # Arguments that are no object.
        '<|tools_prefix|>[{"get_weather": "Paris"}]<|tools_suffix|>',
        # OpenAI's object is not this family's shape.
        '<|tools_prefix|>[{"name": "get_weather", "arguments": {}}]<|tools_suffix|>',
    )
    cut_texts = (
        # Ends at its body: <|tools_suffix|> may be left out (see the module docstring).
        '<|tools_prefix|>[{"get_weather": {"city": "Paris"}}]',
    )
