"""K2 Horizon: calls in IFM special tokens, XML key/value pairs or JSON (``k2-horizon``).

Written from vLLM's parser source (``vllm/tool_parsers/k2_horizon_tool_parser.py``: every call
in ``<ifm|tool_call>`` ... ``</ifm|tool_call>`` inside one ``<ifm|tool_calls>`` group; with
``tool_call_format`` ``xml``, its default, the name then ``<ifm|arg_key>K</ifm|arg_key>
<ifm|arg_value>V</ifm|arg_value>`` pairs, a value typed by the tool's schema; with ``json``, an
object with ``name`` and ``arguments``) and SGLang's (``function_call/k2_v3_detector.py``, which
also reads a call outside the group and "JSON begins with an object or array"). Reasoning is
``<ifm|think>`` ... ``</ifm|think>`` (``reasoning.py``).
"""

from __future__ import annotations

from ._family_contract import FamilyContract


def xml_call(name: str, *pairs: tuple[str, str]) -> str:
    body = "".join(
        f"<ifm|arg_key>{key}</ifm|arg_key><ifm|arg_value>{value}</ifm|arg_value>"
        for key, value in pairs
    )
    return f"<ifm|tool_call>{name}{body}</ifm|tool_call>"


def json_call(body: str) -> str:
    return f"<ifm|tool_call>{body}</ifm|tool_call>"


def group(*calls: str) -> str:
    return "<ifm|tool_calls>" + "".join(calls) + "</ifm|tool_calls>"


XML = group(xml_call("get_weather", ("city", "Paris")))
JSON = group(json_call('{"name": "get_weather", "arguments": {"city": "Paris"}}'))
ONE = [("get_weather", {"city": "Paris"})]


class TestK2Horizon(FamilyContract):
    family = "k2-horizon"
    calls = (
        (XML, ONE),
        (JSON, ONE),
        # Two calls in the group, a value typed by the schema, a call with no argument.
        (
            group(xml_call("get_weather", ("city", "Paris"), ("n", "3")), xml_call("get_time")),
            [("get_weather", {"city": "Paris", "n": 3}), ("get_time", {})],
        ),
        # After reasoning; SGLang reads a JSON list in a call block.
        (
            "<ifm|think>The user wants the weather.</ifm|think>"
            + group(json_call('[{"name": "get_weather", "arguments": {"city": "Paris"}}]')),
            ONE,
        ),
        # A call outside the group (SGLang).
        (xml_call("get_weather", ("city", "Paris")), ONE),
    )
    not_calls = (
        group(xml_call("delete_everything")),
        group(json_call('{"name": "delete_everything", "arguments": {}}')),
        # Drafted in reasoning, then no call.
        "<ifm|think>I could send " + XML + " but I know it.</ifm|think>It is sunny.",
        # Something else in the group.
        "<ifm|tool_calls>" + xml_call("get_weather", ("city", "Paris")) + "and</ifm|tool_calls>",
    )
    cut_texts = (XML, JSON)
