"""Muse Glimmer / Muse Spark: ATEM calls in messages addressed to a tool (``muse``).

Written from the chat template llama.cpp keeps (``models/templates/muse-glimmer.jinja``: a call
is ``'<|start|>assistant to=' + name + '<|message|>'`` then ``<atem:function_calls>\\n
<atem:invoke name="NAME">\\n<atem:parameter name="K">V</atem:parameter>\\n</atem:invoke>\\n
</atem:function_calls>``, ``<|eom|>`` between messages and the turn's end token after the
last; reasoning is ``to=self``; the generation prompt ends with ``<|start|>assistant``; "spaces
for string values are not stripped", "lists and objects should use JSON format") and vLLM's
parser (``vllm/tool_parsers/muse_tool_parser.py``: "an ``<atem:invoke>`` echoed inside a
``to=self`` reasoning block or a ``to=user`` final answer must NOT be parsed as a real tool
call"; ``self``, ``user``, ``commentary`` and ``developer`` are not tools).
"""

from __future__ import annotations

from ._family_contract import FamilyContract


def atem(name: str, *parameters: tuple[str, str]) -> str:
    body = "".join(
        f'<atem:parameter name="{key}">{value}</atem:parameter>\n' for key, value in parameters
    )
    return (
        f'<atem:function_calls>\n<atem:invoke name="{name}">\n{body}</atem:invoke>\n'
        "</atem:function_calls>"
    )


def message(recipient: str, body: str, end: str = "<|eom|>") -> str:
    return f"<|start|>assistant to={recipient}<|message|>{body}{end}"


PARIS = atem("get_weather", ("city", "Paris"))
ONE = [("get_weather", {"city": "Paris"})]
REASONING = " to=self<|message|>The user wants the weather in Paris.<|eom|>"


class TestMuse(FamilyContract):
    family = "muse"
    calls = (
        # The reply's first message is the call (the prompt ended with <|start|>assistant).
        (" to=get_weather<|message|>" + PARIS + "<|eom|>", ONE),
        # Reasoning first, then the call in its own message.
        (REASONING + message("get_weather", PARIS), ONE),
        # Two calls in two messages; typed values, a JSON list, a string's own spaces kept.
        (
            REASONING
            + message("get_weather", atem("get_weather", ("city", " Paris "), ("n", "2")))
            + message("get_time", atem("get_time", ("tags", '["a", "b"]'))),
            [("get_weather", {"city": " Paris ", "n": 2}), ("get_time", {"tags": ["a", "b"]})],
        ),
        # A namespaced tool, offered as written.
        (
            message("Calendar.create_event", atem("Calendar.create_event", ("note", "standup"))),
            [("Calendar.create_event", {"note": "standup"})],
        ),
    )
    not_calls = (
        message("delete_everything", atem("delete_everything")),
        # Echoed in reasoning and in the answer: never a call.
        " to=self<|message|>I could send "
        + PARIS
        + "<|eom|>"
        + message("user", "It is sunny.", "<|eot|>"),
        " to=user<|message|>Write " + PARIS + "<|eot|>",
        message("self", PARIS),
        # Text in the tool's message instead of a block.
        message("get_weather", "Paris please"),
    )
    cut_texts = (" to=get_weather<|message|>" + PARIS,)
