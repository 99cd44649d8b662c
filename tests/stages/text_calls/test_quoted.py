"""A server's quote of the tail of the model's output, read by the family readers.

The quote starts where the server's parser failed, anywhere in the output: what it holds is
read as text is (``docs/text-calls.md``), and a quote that starts after a call's opener, or
inside a reasoning block, gives no call.
"""

from __future__ import annotations

from typing import Any

import pytest

from toolwire.judge import Toolset
from toolwire.stages.text_calls import TextCall
from toolwire.stages.text_calls.quoted import read_quoted_output

SCHEMA: dict[str, Any] = {"type": "object", "properties": {"n": {"type": "integer"}}}
TOOLS = Toolset(
    [
        {"type": "function", "function": {"name": name, "parameters": SCHEMA}}
        for name in ("bash", "read")
    ]
)
K = "<|tool_calls_section_begin|><|tool_call_begin|>functions.bash:0<|tool_call_argument_begin|>"
KIMI = K + '{"n": 1}<|tool_call_end|><|tool_calls_section_end|>'


@pytest.mark.parametrize(
    ("quote", "calls"),
    [
        # Whole calls, several, typed by the tool's schema.
        (
            "<tool_call>\n<function=bash>\n<parameter=n>\n1\n</parameter>\n</function>\n"
            '</tool_call>\n<tool_call>\n{"name": "read", "arguments": {}}\n</tool_call>',
            [TextCall("bash", '{"n":1}'), TextCall("read", "{}")],
        ),
        # Text before a call: the parser failed on it.
        (
            'Let me look.\n<tool_call>{"name": "read", "arguments": {}}</tool_call>',
            [TextCall("read", "{}")],
        ),
        (KIMI, [TextCall("bash", '{"n": 1}')]),
        # Cut, even inside a tag: never runs.
        ("<tool_call>\n<function=bash>\n<", [TextCall("bash", "", cut=True)]),
        ('<tool_call>{"name": "bash", "arguments": {"n": ', [TextCall("bash", '{"n": ', True)]),
        # A reasoning block's end: the reply starts after it (a whole reply counts there).
        ('x</think>\n{"name": "read", "arguments": {}}', [TextCall("read", "{}")]),
    ],
)
def test_the_calls_a_quote_holds(quote: str, calls: list[TextCall]) -> None:
    assert read_quoted_output(quote, TOOLS) == tuple(calls)


@pytest.mark.parametrize(
    "quote",
    [
        "</tool_call>",  # ggml-org/llama.cpp#20761: nothing left but the closing tag
        "",
        "plain text, no markup",
        # Started after the call's opener or name: nothing names the call.
        "<parameter=n>\n1\n</parameter>\n</function>\n</tool_call>",
        '"arguments": {"n": 1}}\n</tool_call>',
        # A tail is not a whole reply: bare JSON, pythonic, GLM-4-0414 are no call in it.
        '{"name": "read", "arguments": {}}',
        "[read()]",
        'bash\n{"n": 1}',
    ],
)
def test_a_quote_without_family_markup_is_none(quote: str) -> None:
    assert read_quoted_output(quote, TOOLS) is None


@pytest.mark.parametrize(
    "quote",
    [
        # Started inside a string of an earlier call: the markup in it is followed by the rest
        # of that call, so it is text, as in a reply.
        'e.g. <tool_call>{"name": "bash", "arguments": {}}</tool_call>"}}\n</tool_call>',
        '<tool_call>{"name": "rm", "arguments": {}}</tool_call>',  # not offered
        "```\n<tool_call>\n<function=bash>\n</function>\n</tool_call>\n```",  # documentation
        "<tool_call>\n<function=bash>\n</function>\n</tool_call>\n</parameter>\n</function>",
        KIMI + "\n</think>\nDone.",  # inside a reasoning block: a draft
    ],
)
def test_markup_that_holds_no_call_is_empty(quote: str) -> None:
    assert read_quoted_output(quote, TOOLS) == ()


def test_no_tools_offered_no_call() -> None:
    assert (
        read_quoted_output('<tool_call>{"name": "bash", "arguments": {}}</tool_call>', None) is None
    )
