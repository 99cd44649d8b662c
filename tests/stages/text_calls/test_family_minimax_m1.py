"""MiniMax-M1: one JSON call object a line inside ``<tool_calls>`` (``minimax-m1``).

Written from the chat template llama.cpp keeps (``models/templates/MiniMax-M1.jinja``): the tool
prompt asks for ``<tool_calls>\\n{"name": <tool-name>, "arguments": <args-json-object>}\\n...
\\n</tool_calls><end_of_sentence>``, and an assistant turn with calls renders each call as
``{"name": "...", "arguments": ...}`` on its own line. Jamba's row reads the same opener with a
JSON list inside; this row reads no list.
"""

from __future__ import annotations

from ._family_contract import FamilyContract

WEATHER = '{"name": "get_weather", "arguments": {"city": "Paris"}}'
TIME = '{"name": "get_time", "arguments": {"n": 2}}'
ONE = [("get_weather", {"city": "Paris"})]
TWO = [("get_weather", {"city": "Paris"}), ("get_time", {"n": 2})]


class TestMiniMaxM1(FamilyContract):
    family = "minimax-m1"
    calls = (
        (f"<tool_calls>\n{WEATHER}\n</tool_calls>", ONE),
        # Two calls, one a line, and the turn's end token (the template's assistant turn).
        (f"<tool_calls>\n{WEATHER}\n{TIME}\n</tool_calls><end_of_sentence>", TWO),
        (f"I will check.\n<tool_calls>\n{WEATHER}\n</tool_calls>", ONE),
    )
    not_calls = (
        '<tool_calls>\n{"name": "delete_everything", "arguments": {}}\n</tool_calls>',
        # One line that is no call: the block is not wholly calls.
        f'<tool_calls>\n{WEATHER}\n{{"name": "Alice", "age": 30}}\n</tool_calls>',
        f"Answer with <tool_calls>\n{WEATHER}\n</tool_calls> when you need a tool.",
        f"```\n<tool_calls>\n{WEATHER}\n</tool_calls>\n```",
    )
    cut_texts = (f"<tool_calls>\n{WEATHER}\n</tool_calls>",)
