"""Solar Open 2: each call a name line and key/value markers (``solar-open2``).

Written from vLLM's parser source (``vllm/tool_parsers/solar_open2_tool_parser.py``, "Parses
the format: ``<|tool_call:start|>{function_name}\\n<|tool_arg:start|>{arg_name}
<|tool_arg:value|>{arg_value}<|tool_arg:end|>\\n<|tool_call:end|>``"; "Argument values are
surfaced as raw strings" and coerced to the tool's declared type, as toolwire types them by
the schema). Reasoning runs in ``<|think:start|>`` ... ``<|think:end|>`` (``reasoning.py``).
"""

from __future__ import annotations

from ._family_contract import FamilyContract


def call(name: str, *pairs: tuple[str, str]) -> str:
    body = "".join(
        f"<|tool_arg:start|>{key}<|tool_arg:value|>{value}<|tool_arg:end|>\n"
        for key, value in pairs
    )
    return f"<|tool_call:start|>{name}\n{body}<|tool_call:end|>"


PARIS = call("get_weather", ("city", "Paris"))
ONE = [("get_weather", {"city": "Paris"})]


class TestSolarOpen2(FamilyContract):
    family = "solar-open2"
    calls = (
        (PARIS, ONE),
        (
            "Let me check.\n"
            + call("get_weather", ("city", "Paris"), ("n", "2"))
            + "\n"
            + call("get_time"),
            [("get_weather", {"city": "Paris", "n": 2}), ("get_time", {})],
        ),
        # A value as written: its spaces are the value's.
        (call("get_weather", ("note", " two words ")), [("get_weather", {"note": " two words "})]),
    )
    not_calls = (
        call("delete_everything"),
        "<|think:start|>" + PARIS + "<|think:end|>It is sunny.",
        PARIS + " is the format.",
    )
    cut_texts = (PARIS,)
