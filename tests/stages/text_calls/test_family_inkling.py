"""Inkling: a JSON call object in a tool-invocation block of special tokens (``inkling``).

Written from vLLM's parser source (``vllm/parser/inkling.py``: every marker a special token,
``<|message_model|><|content_invoke_tool_json|>{"name":"get_weather","args":{"city":"SF"}}
<|end_message|>``; a block may also end with the standalone ``<|content_model_end_sampling|>``;
an optional function name between the two markers is "metadata, not visible assistant
content") and SGLang's (``function_call/inkling_detector.py``). ``<|content_thinking|>`` blocks
are reasoning (``reasoning.py``).
"""

from __future__ import annotations

from ._family_contract import FamilyContract

BLOCK = (
    '<|message_model|><|content_invoke_tool_json|>{"name": "get_weather", "args": '
    '{"city": "Paris"}}<|end_message|>'
)
ONE = [("get_weather", {"city": "Paris"})]


class TestInkling(FamilyContract):
    family = "inkling"
    calls = (
        (BLOCK, ONE),
        # A text block first, then two tool blocks (blocks "may repeat in any order").
        (
            "<|message_model|><|content_text|>Checking.<|end_message|>"
            + BLOCK
            + '<|message_model|><|content_invoke_tool_json|>{"name":"get_time","args":{"n":2}}'
            "<|end_message|>",
            [("get_weather", {"city": "Paris"}), ("get_time", {"n": 2})],
        ),
        # Ended by the standalone end-of-sampling token instead of <|end_message|>.
        (
            '<|content_invoke_tool_json|>{"name": "get_weather", "args": {"city": "Paris"}}'
            "<|content_model_end_sampling|>",
            ONE,
        ),
    )
    not_calls = (
        '<|message_model|><|content_invoke_tool_json|>{"name": "delete_everything", "args": {}}'
        "<|end_message|>",
        # Drafted in a thinking block: reasoning, never a call.
        "<|message_model|><|content_thinking|>maybe "
        + BLOCK[len("<|message_model|>") :]
        + " then answer",
        # Something else where the block's end belongs.
        '<|content_invoke_tool_json|>{"name": "get_weather", "args": {"city": "Paris"}} and so on',
    )
    cut_texts = ('<|content_invoke_tool_json|>{"name": "get_weather", "args": {"city": "Paris"}}',)
