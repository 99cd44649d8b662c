"""Step-Audio 2: the call's type, name and JSON arguments on lines in ``<tool_call>``
(``step-audio2``).

Written from vLLM's parser source (``vllm/tool_parsers/step_audio_2_tool_parser.py``: the body
of ``<tool_call>`` ... ``</tool_call>`` split in three at line feeds, "function\\n
forecast_weather\\n{"location": "shanghai"}", the name checked against the request's tools).
Hermes's row reads the same opener with the JSON call object right after it.
"""

from __future__ import annotations

from ._family_contract import FamilyContract


def call(name: str, arguments: str) -> str:
    return f"<tool_call>function\n{name}\n{arguments}</tool_call>"


SHANGHAI = call("get_weather", '{"city": "shanghai"}')
ONE = [("get_weather", {"city": "shanghai"})]


class TestStepAudio2(FamilyContract):
    family = "step-audio2"
    calls = (
        (SHANGHAI, ONE),
        (
            "Let me check.\n" + SHANGHAI + call("get_time", '{"n": 2}'),
            [("get_weather", {"city": "shanghai"}), ("get_time", {"n": 2})],
        ),
    )
    not_calls = (
        call("delete_everything", "{}"),
        SHANGHAI + " is how the call looks.",
        call("get_weather", "shanghai"),
    )
    cut_texts = (SHANGHAI,)
