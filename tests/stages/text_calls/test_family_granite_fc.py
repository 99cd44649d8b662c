"""granite-20b-functioncalling: ``<function_call> {json}`` once per call, no closing marker.

vLLM ``tool_parsers/granite_20b_fc_tool_parser.py``: each ``<function_call>`` is followed by one
``{"name", "arguments"}`` object, read to its end by JSON's rules.
"""

from __future__ import annotations

from ._family_contract import FamilyContract

ONE = [("get_weather", {"city": "Paris"})]
TWO = [("get_weather", {"city": "Paris"}), ("get_time", {"n": 2})]


class TestGraniteFunctionCalling(FamilyContract):
    family = "granite-fc"
    calls = (
        ('<function_call> {"name": "get_weather", "arguments": {"city": "Paris"}}', ONE),
        (
            '<function_call> {"name": "get_weather", "arguments": {"city": "Paris"}} '
            '<function_call> {"name": "get_time", "arguments": {"n": 2}}',
            TWO,
        ),
        (
            'Checking.\n<function_call> {"name": "get_weather", "arguments": {"city": "Paris"}}',
            ONE,
        ),
    )
    not_calls = (
        '<function_call> {"name": "delete_everything", "arguments": {}}',
        "The <function_call> tag comes before the JSON of each call.",
        '<function_call> {"name": "get_weather", "arguments": {}} is the form to use.',
        # A list is not this model's form.
        '<function_call> [{"name": "get_weather", "arguments": {"city": "Paris"}}]',
    )
    cut_texts = ('<function_call> {"name": "get_weather", "arguments": {"city": "Paris"}}',)
