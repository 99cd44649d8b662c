"""DeepSeek's DSML with each bar doubled (``<||DSML||tool_calls>``; ``deepseek-dsml``).

No template writes it and no server parses it, yet it is how DeepSeek V4 models' calls read in
real leaked outputs: ``<||DSML|| calls>`` from deepseek-v4.1-flash (command-code#909, in
``corpus/reports.jsonl``), ``<||DSML||tool_calls>`` (opencrabs#398), "the double fullwidth bar
form" among 911 leaks a user counted (lsdefine/GenericAgent#804). The grammar is V3.2's, V4's
and V4.1's (``test_family_deepseek_dsml.py``, ``test_family_deepseek_v41.py``), only the
marker differs; the bars are U+FF5C.
"""

from __future__ import annotations

from ._family_contract import FamilyContract

DD = "\uff5c\uff5cDSML\uff5c\uff5c"
ONE = [("get_weather", {"city": "Paris"})]


def block(
    *parameters: str, name: str = "get_weather", wrapper: str = "tool_calls", marker: str = DD
) -> str:
    """A DSML block spelled with ``marker`` (V4.1's has a space after the bars)."""
    return (
        f'<{marker}{wrapper}>\n<{marker}invoke name="{name}">\n'
        + "".join(parameters)
        + f"</{marker}invoke>\n</{marker}{wrapper}>"
    )


def parameter(key: str, value: str, *, string: bool = True, marker: str = DD) -> str:
    kind = str(string).lower()
    return f'<{marker}parameter name="{key}" string="{kind}">{value}</{marker}parameter>\n'


V4 = block(parameter("city", "Paris"))
V41 = block(parameter("city", "Paris", marker=DD + " "), wrapper="calls", marker=DD + " ")


class TestDeepSeekDsmlDoubled(FamilyContract):
    family = "deepseek-dsml"
    calls = (
        (V4, ONE),
        (block(parameter("city", "Paris"), wrapper="function_calls"), ONE),
        # command-code#909's shape: a sentence, a blank line, V4.1's spaced block.
        ("First, let me read the skill and gather the facts.\n\n" + V41, ONE),
        (
            block(parameter("n", "2", string=False), parameter("city", "Oslo")),
            [("get_weather", {"n": 2, "city": "Oslo"})],
        ),
    )
    not_calls = (
        block(parameter("city", "Paris"), name="delete_everything"),
        # Quoted in prose, as the reports themselves do (tinyagents#151).
        "Recovers DeepSeek DSML tool calls (`" + V41 + "`) into canonical tags.",
        # A doubled opener around single-bar tags: no one spelling, no call.
        f"<{DD}tool_calls>\n"
        + '<\uff5cDSML\uff5cinvoke name="get_weather">\n'
        + '<\uff5cDSML\uff5cparameter name="city" string="true">Paris</\uff5cDSML\uff5cparameter>\n'
        + f"</\uff5cDSML\uff5cinvoke>\n</{DD}tool_calls>",
        "Write " + V4 + " to check the weather.",
    )
    cut_texts = (V4, V41)
