"""Firefunction v2 and Phi-4-mini: ``functools[{...}, ...]``, no closing marker.

fireworks-ai-llama-3-firefunction-v2.jinja (llama.cpp ``models/templates``): "prefix function
calls with functools marker (no closing marker required)", rendered as
``content + ' functools[' + calls + ']'`` and ``<|eot_id|>``. vLLM
``tool_parsers/phi4mini_tool_parser.py`` reads ``functools[...]`` for Phi-4-mini with vLLM's
template (whose turns end with ``<|end|>``).
"""

from __future__ import annotations

from ._family_contract import FamilyContract

ONE = [("get_weather", {"city": "Paris"})]
TWO = [("get_weather", {"city": "Paris"}), ("get_time", {"n": 2})]


class TestFunctools(FamilyContract):
    family = "functools"
    calls = (
        ('functools[{"name": "get_weather", "arguments": {"city": "Paris"}}]', ONE),
        (
            ' functools[{"name": "get_weather", "arguments": {"city": "Paris"}}, '
            '{"name": "get_time", "arguments": {"n": 2}}]<|eot_id|>',
            TWO,
        ),
        (
            'Let me check. functools[{"name": "get_weather", "arguments": {"city": "Paris"}}]'
            "<|end|>",
            ONE,
        ),
    )
    not_calls = (
        'functools[{"name": "delete_everything", "arguments": {}}]',
        "Use functools.partial(get_weather, city='Paris') instead.",
        "import functools\nfunctools.reduce(add, [1, 2])",
        'The model writes functools[{"name": "get_weather", "arguments": {}}] and stops.',
        # Not a list: not this family's form.
        'functools{"name": "get_weather", "arguments": {"city": "Paris"}}',
    )
    cut_texts = ('functools[{"name": "get_weather", "arguments": {"city": "Paris"}}]',)
