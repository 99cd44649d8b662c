"""OLMo 3: keyword calls one per line inside ``<function_calls>`` ... ``</function_calls>``.

vLLM ``tool_parsers/olmo3_tool_parser.py`` reads newline-separated pythonic calls between the
tags (and JSON's ``true`` / ``false`` / ``null`` as values).
"""

from __future__ import annotations

from ._family_contract import FamilyContract

ONE = [("get_weather", {"city": "Paris"})]
TWO = [("get_weather", {"city": "Paris"}), ("get_time", {"n": 2})]


class TestOlmo3(FamilyContract):
    family = "olmo3"
    calls = (
        ('<function_calls>\nget_weather(city="Paris")\n</function_calls>', ONE),
        (
            '<function_calls>\nget_weather(city="Paris")\nget_time(n=2)\n</function_calls>',
            TWO,
        ),
        (
            'Let me check.\n<function_calls>\nget_weather(city="Paris", on=true)\n'
            "</function_calls>",
            [("get_weather", {"city": "Paris", "on": True})],
        ),
    )
    not_calls = (
        "<function_calls>\ndelete_everything()\n</function_calls>",
        # A list is not this family's form.
        '<function_calls>\n[get_weather(city="Paris")]\n</function_calls>',
        # A positional argument names no parameter.
        '<function_calls>\nget_weather("Paris")\n</function_calls>',
        'Put each call on its own line in <function_calls>\nget_weather(city="Paris")\n'
        "</function_calls>, as shown.",
    )
    cut_texts = ('<function_calls>\nget_weather(city="Paris")\n</function_calls>',)
