"""Functionary v3.2: ``>>>NAME`` then the JSON arguments, per call (``functionary-v3.2``).

Written from the chat template llama.cpp keeps
(``models/templates/meetkai-functionary-medium-v3.2.jinja``: "Respond in this format:
>>>${recipient}\n${content}", text as ``>>>all\n...``, each call
``'>>>' + name + '\n' + arguments``, the turn ended by ``<|eot_id|>``; the generation prompt
ends with ``>>>``) and llama.cpp's parser (``common/parsers/functionary-v3-2.cpp``: "Tool calls:
>>>function_name\n{json_args}", content "stops before the next >>>"). So the reply's first
call has no ``>>>`` (``NAME\n{json}``, read as a whole reply: glm-markerless's grammar) and
later calls do. Functionary v3.1's ``<function=NAME>{json}</function>`` is the ``llama`` family.
"""

from __future__ import annotations

from ._family_contract import TOOLS, FamilyContract, runnable
from ._harness import run_text

ONE = [("get_weather", {"city": "Paris"})]
TWO = [("get_weather", {"city": "Paris"}), ("get_time", {"n": 2})]


class TestFunctionaryV32(FamilyContract):
    family = "functionary-v3.2"
    calls = (
        ('all\nLet me check.>>>get_weather\n{"city": "Paris"}', ONE),
        ('all\nChecking both.>>>get_weather\n{"city": "Paris"}>>>get_time\n{"n": 2}', TWO),
        ('all\nOne moment.\n>>>get_weather\n{"city": "Paris"}<|eot_id|>', ONE),
    )
    not_calls = (
        '>>>delete_everything\n{"path": "/"}',
        # A Python prompt in prose, and the recipient "all" (text).
        '>>> get_weather\n{"city": "Paris"}',
        ">>>all\nThe weather is fine.",
        # Prose after the call: the markers are ASCII, so only at the tail.
        '>>>get_weather\n{"city": "Paris"} is what I would send.',
        '>>>get_weather\n"Paris"',
    )
    cut_texts = ('all\nLet me check.>>>get_weather\n{"city": "Paris"}',)


def test_the_first_call_follows_the_prompts_marker() -> None:
    """The prompt ends with ">>>": the reply starts with the first call's name, and every call
    after it has its own ">>>" (all of them run, in order)."""
    text = 'get_weather\n{"city": "Paris"}>>>get_time\n{"n": 2}'
    assert runnable(text) == TWO
    turn, _ = run_text([text], TOOLS)
    assert [call.text_family for call in turn.calls] == ["glm-markerless", "functionary-v3.2"]
