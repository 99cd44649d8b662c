"""IQuest: GLM's key/value calls in ``<iquest_tool_call>`` (``iquest``).

Written from SGLang's parser source (``python/sglang/srt/function_call/iquest_q1_detector.py``:
each call ``<iquest_tool_call>NAME<arg_key>K</arg_key><arg_value>V</arg_value>
</iquest_tool_call>``, the name everything before the first ``<arg_key>``, a value typed by
the tool's schema unless the parameter is a string).
"""

from __future__ import annotations

from ._family_contract import FamilyContract


def call(name: str, *pairs: tuple[str, str]) -> str:
    body = "".join(
        f"<arg_key>{key}</arg_key><arg_value>{value}</arg_value>" for key, value in pairs
    )
    return f"<iquest_tool_call>{name}{body}</iquest_tool_call>"


PARIS = call("get_weather", ("city", "Paris"))
ONE = [("get_weather", {"city": "Paris"})]


class TestIQuest(FamilyContract):
    family = "iquest"
    calls = (
        (PARIS, ONE),
        (
            PARIS + "\n" + call("get_time", ("n", "2"), ("on", "true")),
            [("get_weather", {"city": "Paris"}), ("get_time", {"n": 2, "on": True})],
        ),
        ("<iquest_tool_call>get_time\n</iquest_tool_call>", [("get_time", {})]),
    )
    not_calls = (
        call("delete_everything"),
        "Write " + PARIS + " to ask.",
        "<iquest_tool_call>get_weather<arg_key>city</arg_key>Paris</iquest_tool_call>",
    )
    cut_texts = (PARIS,)
