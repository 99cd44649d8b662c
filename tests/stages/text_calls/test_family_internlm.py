"""InternLM2 / 2.5, Intern-S1: ``<|action_start|><|plugin|>\n{json}<|action_end|>``.

lmdeploy ``lmdeploy/model.py`` (InternLM2Chat7B) renders a call as
``<|action_start|><|plugin|>\n{"name": ..., "parameters": ...}<|action_end|>`` and stops on
``<|action_end|>`` (a stop word, so a server may never send it); vLLM
``tool_parsers/internlm2_tool_parser.py`` and SGLang ``function_call/internlm_detector.py``
(a blank allowed between the two tokens, several calls in a row) read it.
"""

from __future__ import annotations

from ._family_contract import FamilyContract

ONE = [("get_weather", {"city": "Paris"})]
TWO = [("get_weather", {"city": "Paris"}), ("get_time", {"n": 2})]


class TestInternLM(FamilyContract):
    family = "internlm"
    calls = (
        (
            '<|action_start|><|plugin|>\n{"name": "get_weather", "parameters": '
            '{"city": "Paris"}}<|action_end|>',
            ONE,
        ),
        (
            '<|action_start|><|plugin|>\n{"name": "get_weather", "parameters": '
            '{"city": "Paris"}}<|action_end|><|action_start|> <|plugin|>\n'
            '{"name": "get_time", "arguments": {"n": 2}}<|action_end|>',
            TWO,
        ),
        (
            'I need the weather.<|action_start|><|plugin|>\n{"name": "get_weather", '
            '"parameters": {"city": "Paris"}}<|im_end|>',
            ONE,
        ),
    )
    not_calls = (
        '<|action_start|><|plugin|>\n{"name": "delete_everything", "parameters": {}}<|action_end|>',
        # The code interpreter, not a function call.
        "<|action_start|><|interpreter|>\nprint(get_weather)\n<|action_end|>",
        'Call <|action_start|><|plugin|>\n{"name": "get_weather", "parameters": {}}'
        "<|action_end|> when needed.",
    )
    cut_texts = (
        # Ends at its body: <|action_end|> is a stop word (see the module docstring).
        '<|action_start|><|plugin|>\n{"name": "get_weather", "parameters": {"city": "Paris"}}',
    )
