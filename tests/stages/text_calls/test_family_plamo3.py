"""PLaMo 3: calls as a name and a JSON object between multi-token markers (``plamo3``).

Written from vLLM's parser source (``vllm/parser/plamo3.py``): the calls between
``<|plamo:begin_tool_requests:plamo|>`` and ``<|plamo:end_tool_requests:plamo|>``, each
``<|plamo:begin_tool_request:plamo|><|plamo:begin_tool_name:plamo|>`` NAME
``<|plamo:end_tool_name:plamo|><|plamo:begin_tool_arguments:plamo|><|plamo:constrain|>json
<|plamo:msg|>`` {...} ``<|plamo:end_tool_arguments:plamo|><|plamo:end_tool_request:plamo|>``,
the turn ended by ``<|plamo:tag|>``; the markers "are split into multiple tokenizer tokens".
The structural tag it constrains calls with (``vllm/tool_parsers/structural_tag_registry.py``,
``get_plamo3_structural_tag``) puts no separator between calls. Reasoning is
``<|plamo:begin_think:plamo|>`` ... ``<|plamo:end_think:plamo|>`` (``reasoning.py``).
"""

from __future__ import annotations

from ._family_contract import FamilyContract


def request(name: str, arguments: str) -> str:
    return (
        "<|plamo:begin_tool_request:plamo|><|plamo:begin_tool_name:plamo|>"
        f"{name}<|plamo:end_tool_name:plamo|><|plamo:begin_tool_arguments:plamo|>"
        f"<|plamo:constrain|>json<|plamo:msg|>{arguments}<|plamo:end_tool_arguments:plamo|>"
        "<|plamo:end_tool_request:plamo|>"
    )


def requests(*calls: str) -> str:
    return (
        "<|plamo:begin_tool_requests:plamo|>" + "".join(calls) + "<|plamo:end_tool_requests:plamo|>"
    )


WEATHER = request("get_weather", '{"city": "Paris"}')
ONE = [("get_weather", {"city": "Paris"})]


class TestPlamo3(FamilyContract):
    family = "plamo3"
    calls = (
        (requests(WEATHER), ONE),
        (
            requests(WEATHER, request("get_time", '{"n": 2}')) + "<|plamo:tag|>",
            [("get_weather", {"city": "Paris"}), ("get_time", {"n": 2})],
        ),
        # After reasoning the prompt opened (thinking on).
        ("The user asks for Paris.<|plamo:end_think:plamo|>" + requests(WEATHER), ONE),
    )
    not_calls = (
        requests(request("delete_everything", "{}")),
        # Text markers: quoted in prose, no call.
        "PLaMo writes " + requests(WEATHER) + " to call a tool.",
        # Drafted in reasoning.
        "<|plamo:begin_think:plamo|>maybe "
        + requests(WEATHER)
        + "<|plamo:end_think:plamo|>It is sunny.",
    )
    cut_texts = (requests(WEATHER),)
