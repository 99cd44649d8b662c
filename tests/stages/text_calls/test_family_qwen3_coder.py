"""Qwen3-Coder XML calls (``qwen3-coder``), read by the XML-parameter reader from its row
(``stages/text_calls/xml_families.py``), for every model whose template writes them.

Cases written from the chat templates llama.cpp keeps and serves with one parser
(``common/parsers/qwen3-coder.cpp``): ``Qwen3-Coder.jinja``, ``Qwen3.5-4B.jinja`` (content,
then ``\\n\\n<tool_call>``), ``NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.jinja`` (``<think></think>``
first), ``StepFun3.5-Flash.jinja``; and public reports: the wrapper dropped (ollama#16686), a
parameter left open (vllm#21571).
"""

from __future__ import annotations

from ._family_contract import FamilyContract


def function(name: str, *parameters: tuple[str, str]) -> str:
    body = "".join(f"<parameter={key}>\n{value}\n</parameter>\n" for key, value in parameters)
    return f"<function={name}>\n{body}</function>"


def wrapped(inside: str) -> str:
    return f"<tool_call>\n{inside}\n</tool_call>"


NEW_YORK = function("get_weather", ("city", "New York"), ("n", "7"))


class TestQwen3Coder(FamilyContract):
    family = "qwen3-coder"
    calls = (
        (wrapped(NEW_YORK), [("get_weather", {"city": "New York", "n": 7})]),
        # Qwen3.5: content, then the calls after a blank line, each in its wrapper.
        (
            "I'll check both.\n\n" + wrapped(NEW_YORK) + "\n" + wrapped(function("get_time")),
            [("get_weather", {"city": "New York", "n": 7}), ("get_time", {})],
        ),
        # Nemotron 3 Nano: an empty think block, then the call.
        ("<think></think>" + wrapped(NEW_YORK), [("get_weather", {"city": "New York", "n": 7})]),
        # The wrapper dropped (ollama#16686).
        (NEW_YORK, [("get_weather", {"city": "New York", "n": 7})]),
        # A parameter left open, closed by the next tag (vllm#21571).
        (
            "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n<parameter=n>\n1\n"
            "</parameter>\n</function>\n</tool_call>",
            [("get_weather", {"city": "Paris", "n": 1})],
        ),
    )
    not_calls = (
        wrapped(function("delete_everything")),
        "Write " + wrapped(NEW_YORK) + " to call it.",
        "```\n" + wrapped(NEW_YORK) + "\n```",
        # A name in <parameter=...> where <function= belongs (ds4#1050).
        "<tool_call>\n<parameter=get_weather>\n</parameter>\n</tool_call>",
    )
    # Unwrapped: the call ends at </function>, so every shorter prefix is cut. (Wrapped, a
    # call closed by </function> before a cut </tool_call> is whole, as Qwen's parser has it.)
    cut_texts = (NEW_YORK,)
