"""Solar Open: each call an id, a name and a JSON object in special tokens (``solar-open``).

Written from the chat template llama.cpp keeps (``models/templates/upstage-Solar-Open-100B.jinja``:
the tool prompt's format ``<|tool_call:begin|><tool-call-id><|tool_call:name|><tool-name>
<|tool_call:args|><args-json-object><|tool_call:end|>``, the id "a randomly generated string
consisting of 10 lowercase letters (a-z) and/or digits (0-9)"; an assistant message with calls
is ``<|begin|>assistant<|tool_calls|>`` then the calls then ``<|calls|>``, and the generation
prompt ends with ``<|begin|>assistant``). llama.cpp reads it with its auto-parser ("Solar Open"
patch in ``common/chat-diff-analyzer.cpp``).
"""

from __future__ import annotations

from ._family_contract import FamilyContract


def call(call_id: str, name: str, arguments: str) -> str:
    return (
        f"<|tool_call:begin|>{call_id}<|tool_call:name|>{name}<|tool_call:args|>{arguments}"
        "<|tool_call:end|>"
    )


WEATHER = call("a1b2c3d4e5", "get_weather", '{"city": "Paris"}')
TIME = call("k3x9q2m7z0", "get_time", '{"n": 2}')
ONE = [("get_weather", {"city": "Paris"})]


class TestSolarOpen(FamilyContract):
    family = "solar-open"
    calls = (
        (f"<|tool_calls|>{WEATHER}<|calls|>", ONE),
        (
            f"<|tool_calls|>{WEATHER}{TIME}<|calls|>",
            [("get_weather", {"city": "Paris"}), ("get_time", {"n": 2})],
        ),
        # <|calls|> ends the message: a server that stops on it never sends it.
        (f"<|tool_calls|>{WEATHER}", ONE),
        # A dotted name, arguments with a nested object.
        (
            "<|tool_calls|>"
            + call("0a0a0a0a0a", "Calendar.create_event", '{"opts": {"at": "9:00"}}')
            + "<|calls|>",
            [("Calendar.create_event", {"opts": {"at": "9:00"}})],
        ),
    )
    not_calls = (
        "<|tool_calls|>" + call("a1b2c3d4e5", "delete_everything", "{}") + "<|calls|>",
        # The tool prompt's placeholders, quoted.
        "Format: <|tool_call:begin|><tool-call-id><|tool_call:name|><tool-name>"
        "<|tool_call:args|><args-json-object><|tool_call:end|>",
        # Arguments that are no object.
        "<|tool_calls|>" + call("a1b2c3d4e5", "get_weather", '"Paris"') + "<|calls|>",
    )
    # <|calls|> may be left out (above), so the text ends where the call's own end is.
    cut_texts = (f"<|tool_calls|>{WEATHER}",)
