"""gpt-oss harmony as servers stream it: no ``<|call|>`` (a stop token), the reply starting right
after the prompt's ``<|start|>assistant``, the recipient before or after the channel.

Sources of the forms (each case written here, none copied from a parser's tests):

- openai/harmony ``docs/format.md``: ``<|call|>`` and ``<|return|>`` are "valid stop tokens";
  "the recipient might be defined in the role or channel section of the header"; the examples
  ``<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>...`` and
  ``to=functions.generate_file<|constrain|>json`` (no blank before the constraint).
- llama.cpp ``models/templates/openai-gpt-oss-120b.jinja``: the generation prompt ends with
  ``<|start|>assistant``; past calls are written ``<|start|>assistant to=functions.NAME
  <|channel|>commentary json<|message|>{...}<|call|>``.
- llama.cpp ``common/parsers/gpt-oss.cpp``: a call is the header then the JSON arguments, no
  ``<|call|>`` after them (the server stops on it).
- ggml-org/llama.cpp#15181: llama-server's content `` to=functions.get_weather...``, the text
  right after ``<|start|>assistant``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from toolwire.core.events import Finish

from ._harness import run_text, visible_text

SCHEMA: dict[str, Any] = {"type": "object", "properties": {"location": {"type": "string"}}}
TOOLS = [
    {"type": "function", "function": {"name": name, "parameters": SCHEMA}}
    for name in ("get_weather", "Calendar.create_event", "mcp__fs__read-file")
]
LIMIT = Finish(
    reason="length", raw="length", truncated=True, evidence=("finish_reason",), cut_by="token_limit"
)
PARIS = '{"location":"Paris"}'

# (what the server sent as text, the call's name); each ends the turn with "stop".
CALLS = [
    # llama-server: the text right after <|start|>assistant, recipient first, no <|call|>
    (f" to=functions.get_weather<|channel|>commentary json<|message|>{PARIS}", "get_weather"),
    # the channel first, the constraint token, no <|call|>
    (
        f"<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{PARIS}",
        "get_weather",
    ),
    # reasoning on the analysis channel, then the call message (format.md, without <|call|>)
    (
        "<|channel|>analysis<|message|>Need to use function get_weather.<|end|>"
        f"<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json"
        f"<|message|>{PARIS}",
        "get_weather",
    ),
    # the recipient in the role section, after <|start|>assistant (the template's own form)
    (
        f"<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{PARIS}",
        "get_weather",
    ),
    # the constraint glued to the recipient (format.md's preamble example)
    (
        f"<|channel|>commentary to=functions.get_weather<|constrain|>json<|message|>{PARIS}",
        "get_weather",
    ),
    # gpt-oss addresses functions on the analysis channel too (vllm-mlx#562)
    (f"<|channel|>analysis to=functions.get_weather code<|message|>\n{PARIS}\n", "get_weather"),
    # with <|call|>, as a server that does not stop on it sends it
    (
        f"<|start|>assistant<|channel|>commentary to=functions.get_weather json<|message|>"
        f"{PARIS}<|call|>",
        "get_weather",
    ),
    # a dotted and a dashed name: the recipient is a word of the header, up to a blank or token
    (
        f"<|channel|>commentary to=functions.Calendar.create_event json<|message|>{PARIS}",
        "Calendar.create_event",
    ),
    (
        f" to=functions.mcp__fs__read-file<|channel|>commentary json<|message|>{PARIS}",
        "mcp__fs__read-file",
    ),
]


@pytest.mark.parametrize(("text", "name"), CALLS)
def test_a_call_counts_with_or_without_its_stop_token(text: str, name: str) -> None:
    turn, events = run_text([text], TOOLS)
    assert [(call.name, call.arguments, call.may_run) for call in turn.calls] == [
        (name, {"location": "Paris"}, True)
    ]
    assert turn.stop_reason == "tool_calls"
    assert not turn.truncated
    assert "to=functions" not in visible_text(events)
    # any split of the stream gives the same turn
    by_character, _ = run_text(list(text), TOOLS)
    assert [(c.name, c.arguments) for c in by_character.calls] == [(name, {"location": "Paris"})]
    assert by_character.text == turn.text


@pytest.mark.parametrize(("text", "name"), CALLS)
def test_the_token_limit_cuts_a_call_no_token_ended(text: str, name: str) -> None:
    """``length`` with no ``<|call|>``: the limit may have ended the JSON where it looks
    complete, as for every call with no end marker (docs/text-calls.md)."""
    turn, _ = run_text([text], TOOLS, finish=LIMIT)
    (call,) = turn.calls
    assert call.name == name
    assert call.truncated == (not text.endswith("<|call|>"))
    assert call.may_run == text.endswith("<|call|>")


@pytest.mark.parametrize(
    "text",
    [
        "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>"
        '{"location":"Pa',
        ' to=functions.get_weather<|channel|>commentary json<|message|>{"location":',
        "<|start|>assistant<|channel|>commentary to=functions.get_weather json<|message|>",
        "<|start|>assistant<|channel|>commentary to=functions.get_weather json<|message|>\n",
    ],
)
def test_a_cut_body_is_truncated_and_never_runs(text: str) -> None:
    turn, _ = run_text([text], TOOLS)
    (call,) = turn.calls
    assert (call.name, call.truncated, call.may_run) == ("get_weather", True, False)
    assert turn.truncated


@pytest.mark.parametrize(
    "text",
    [
        # an ordinary message: <|end|> ends it, not <|call|> (Ollama's harmony fixture)
        "<|start|>assistant<|channel|>commentary to=functions.get_weather<|message|>Calling<|end|>",
        f"<|channel|>analysis to=functions.get_weather json<|message|>{PARIS}<|end|>",
        # a body that is no JSON, and no <|call|>: nothing to run
        "<|channel|>commentary to=functions.get_weather json<|message|>Let me check.",
        # an empty body, and the next message begins
        "<|channel|>commentary to=functions.get_weather json<|message|><|start|>assistant"
        "<|channel|>final<|message|>Done.",
        # a tool's (made-up) result, a built-in tool, the assistant, a name not offered
        f"<|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>{PARIS}",
        f"<|channel|>analysis to=browser.search code<|message|>{PARIS}",
        f"<|channel|>commentary to=assistant<|channel|>analysis<|message|>{PARIS}",
        f"<|channel|>commentary to=functions.delete_all json<|message|>{PARIS}",
        # a name glued to its content type is not the offered name (no guess: llama.cpp#15158)
        f"<|channel|>commentary to=functions.get_weatherjson<|message|>{PARIS}",
        # no channel token: the header of no message (livekit#1632's leak had none)
        f" to=functions.get_weather json<|message|>{PARIS}",
        # the final channel is the answer, whatever it quotes
        f"<|channel|>final to=functions.get_weather<|message|>{PARIS}",
        # the recipient in prose
        f"Send it to=functions.get_weather<|channel|> later; {PARIS}",
    ],
)
def test_not_a_call(text: str) -> None:
    turn, _ = run_text([text], TOOLS)
    assert turn.calls == ()
    assert turn.text == text


def test_the_text_before_a_call_stays_and_the_call_after_a_final_message_counts() -> None:
    text = (
        "<|channel|>analysis<|message|>Plan.<|end|><|start|>assistant<|channel|>commentary"
        f"<|message|>Checking the weather.<|end|><|start|>assistant to=functions.get_weather"
        f"<|channel|>commentary json<|message|>{PARIS}"
    )
    turn, _ = run_text([text], TOOLS)
    assert [call.name for call in turn.runnable] == ["get_weather"]
    assert turn.text.endswith("Checking the weather.<|end|>")


# LLM-jp 4.1 (harmony with parallel calls). Cases written here from llama.cpp
# ``models/templates/llm-jp-llm-jp-4.1-8b-thinking.jinja`` ("Parallel tool calls: every call is
# rendered; all but the last end with <|end|>, the last with <|call|>"; each call
# ``<|start|>assistant to=functions.NAME<|channel|>commentary <|constrain|> json<|message|>ARGS``;
# the generation prompt ends with ``<|start|>assistant``) and ``common/parsers/llm-jp-harmony.cpp``
# (the tokenizer writes a blank after every special token; ``call (<|end|> <|start|>assistant
# call)*``, the last call ended by the server's stop on ``<|call|>``).
TOKYO = '{"location":"Tokyo"}'
README = '{"location":"README.md"}'


def _llm_jp_reply(calls: list[tuple[str, str]], last_end: str, *, blanks: bool = False) -> str:
    """A reply of one call message per call, as the text after the prompt's
    ``<|start|>assistant``: every message but the last closed by ``<|end|>``."""
    space = " " if blanks else ""
    messages = [
        f"{space}to=functions.{name}<|channel|>{space}commentary <|constrain|>{space}json"
        f"<|message|>{space}{arguments}{'<|end|>' if i < len(calls) - 1 else last_end}"
        for i, (name, arguments) in enumerate(calls)
    ]
    return " " + f"<|start|>{space}assistant ".join(messages)


TWO = [("get_weather", PARIS), ("Calendar.create_event", TOKYO)]
THREE = [("get_weather", PARIS), ("get_weather", TOKYO), ("mcp__fs__read-file", README)]
LLM_JP_RUNS = [
    # the template's own rendering: <|end|> between the calls, <|call|> after the last
    (_llm_jp_reply(TWO, "<|call|>"), TWO),
    # as llama-server streams it: <|call|> is a stop token, never sent
    (_llm_jp_reply(TWO, ""), TWO),
    # the tokenizer's blank after every special token (llm-jp-harmony.cpp)
    (_llm_jp_reply(TWO, "", blanks=True), TWO),
    # three calls, the same tool twice
    (_llm_jp_reply(THREE, ""), THREE),
]


@pytest.mark.parametrize(("text", "calls"), LLM_JP_RUNS)
def test_every_call_of_an_llm_jp_run_counts(text: str, calls: list[tuple[str, str]]) -> None:
    """Before this, a call closed by ``<|end|>`` was an ordinary message: only the last ran."""
    turn, events = run_text([text], TOOLS)
    expected = [(name, json.loads(arguments)) for name, arguments in calls]
    assert [(call.name, call.arguments) for call in turn.calls] == expected
    assert all(call.may_run for call in turn.calls)
    assert len({call.id for call in turn.calls}) == len(calls)
    assert turn.stop_reason == "tool_calls"
    assert not turn.truncated
    assert "to=functions" not in visible_text(events)
    # any split of the stream gives the same calls
    by_character, _ = run_text(list(text), TOOLS)
    assert [(call.name, call.arguments) for call in by_character.calls] == expected
    assert by_character.text == turn.text


@pytest.mark.parametrize(
    "text",
    [
        # one call closed by <|end|>, nothing after it: an ordinary message, as before
        _llm_jp_reply([("get_weather", PARIS)], "<|end|>"),
        _llm_jp_reply(TWO, "<|end|>"),
        # the run ends in the final answer, in prose, or in a message that is no call
        _llm_jp_reply([("get_weather", PARIS)], "<|end|>")
        + "<|start|>assistant<|channel|>final<|message|>Done.",
        _llm_jp_reply([("get_weather", PARIS)], "<|end|>") + " Done.",
        _llm_jp_reply([("get_weather", PARIS), ("get_weather", "Let me check.")], "<|end|>"),
        _llm_jp_reply([("get_weather", PARIS), ("delete_all", TOKYO)], ""),
        # the next message is a (made-up) result of the tool
        _llm_jp_reply([("get_weather", PARIS)], "<|end|>")
        + f"<|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>{TOKYO}",
        # a body of two JSON values is no call, so the run it opens is none either
        _llm_jp_reply([("get_weather", f"{PARIS} {PARIS}"), ("get_weather", TOKYO)], "<|end|>"),
    ],
)
def test_a_run_that_ends_in_no_call_is_no_call(text: str) -> None:
    turn, _ = run_text([text], TOOLS)
    assert turn.calls == ()
    assert turn.text == text


def test_the_limit_cuts_the_last_call_of_a_run_and_the_others_stand() -> None:
    text = _llm_jp_reply([("get_weather", PARIS), ("get_weather", '{"location":"To')], "")
    turn, _ = run_text([text], TOOLS, finish=LIMIT)
    assert [(call.may_run, call.truncated) for call in turn.calls] == [(True, False), (False, True)]
    assert turn.truncated


def test_a_call_drafted_in_llm_jp_reasoning_never_runs() -> None:
    """LLM-jp's analysis message has the tokenizer's blank after ``<|channel|>``
    (llm-jp-harmony.cpp); a call written inside it is a draft. Before, only the unspaced
    opener was reasoning, so the drafted ``get_weather`` ran."""
    draft = f'<tool_call>{{"name": "get_weather", "arguments": {TOKYO}}}</tool_call>'
    text = (
        f"<|channel|> analysis<|message|> I could call {draft}<|end|>"
        + "<|start|> assistant"
        + _llm_jp_reply([("Calendar.create_event", PARIS)], "", blanks=True)
    )
    turn, _ = run_text([text], TOOLS)
    assert [(call.name, call.may_run) for call in turn.calls] == [("Calendar.create_event", True)]
    # with a recipient before it, the analysis channel carries a call (gpt-oss does the same)
    addressed = f" to=functions.get_weather<|channel|> analysis<|message|> {PARIS}"
    turn, _ = run_text([addressed], TOOLS)
    assert [(call.name, call.may_run) for call in turn.calls] == [("get_weather", True)]
