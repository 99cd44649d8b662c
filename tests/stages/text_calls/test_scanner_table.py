"""The scanner's compiled table is its rules, only faster: the trie alternation finds what the
longest-first alternation found, the held tail is every beginning of a token at the end, and
the ordinary text the stage passes without a scan is what the scan decides as ordinary text.
Texts are built from the table's own tokens, their beginnings, inline code and prose."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from toolwire.core.events import TextDelta
from toolwire.stages.text_calls import TextCallStage
from toolwire.stages.text_calls._scanner import ReaderTable, ScanState, scan, trie_pattern
from toolwire.stages.text_calls.reasoning import REASONING

from ._harness import events_of, run_steps, visible_text

TOOLS = [{"type": "function", "function": {"name": "get_time", "parameters": {}}}]
STAGE = TextCallStage(None, TOOLS)
TABLE = STAGE.table
assert isinstance(TABLE, ReaderTable)
#: Every token (openers, reasoning wrappers) and every beginning of one.
TOKENS = sorted(
    {*TABLE.by_opener, *REASONING.tokens, *(token for token in TABLE.prefixes if len(token) > 1)}
)
PIECES = [
    *TOKENS,
    "`",
    "``",
    "```",
    "`code`",
    "``a`b``",
    "\n",
    " ",
    "a < b",
    "[x](y)",
    "{",
    "}",
    "f",
    "A",
    ">",
    "]",
    "prose. ",
    '{"name": "get_time", "arguments": {}}',
    "</tool_call>",
    "<|end|>",
    "get_time",
]
texts = st.lists(st.sampled_from(PIECES), max_size=20).map("".join)


def _flat(tokens: list[str]) -> re.Pattern[str]:
    """The alternation the trie replaced: every token, the longest first."""
    ordered = sorted(tokens, key=lambda token: (-len(token), token))
    return re.compile("|".join(re.escape(token) for token in ordered))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.text("ab<|>`", min_size=1, max_size=5), min_size=1, max_size=8), st.text("ab<|>`x")
)
def test_the_trie_matches_the_longest_token_as_the_flat_alternation(
    tokens: list[str], text: str
) -> None:
    trie, flat = re.compile(trie_pattern(tokens)), _flat(tokens)
    for at in range(len(text) + 1):
        found, expected = trie.match(text, at), flat.match(text, at)
        assert (found and found.group()) == (expected and expected.group())
    found, expected = trie.search(text), flat.search(text)
    assert (found and found.span()) == (expected and expected.span())


@settings(max_examples=200, deadline=None)
@given(texts)
def test_the_table_finds_the_tokens_the_flat_alternation_finds(text: str) -> None:
    flat = _flat([*TABLE.by_opener, "`", "```", *REASONING.tokens])
    for at in range(len(text) + 1):
        found, expected = TABLE.pattern.match(text, at), flat.match(text, at)
        assert (found and found.group()) == (expected and expected.group())


@settings(max_examples=300, deadline=None)
@given(texts, st.integers(min_value=0, max_value=40))
def test_the_held_tail_is_the_first_token_beginning_that_ends_the_text(
    text: str, start: int
) -> None:
    start = min(start, len(text))
    window = range(max(start, len(text) - TABLE.longest + 1), len(text))
    expected = next((index for index in window if text[index:] in TABLE.prefixes), len(text))
    assert TABLE.held_tail(text, start) == expected


@settings(max_examples=300, deadline=None)
@given(texts, st.booleans())
def test_the_scan_from_where_ordinary_text_ends_decides_as_the_whole_scan(
    text: str, line_start: bool
) -> None:
    """What the stage does with a batch in text mode: pass ``text[:end]`` and scan the rest."""
    state = ScanState(reply_pending=False, line_start=line_start)
    context = STAGE.context
    end = TABLE.ordinary_end(text, 0)
    whole = scan(TABLE, text, state, context)
    assert all(block.start >= end for block in whole.blocks)
    assert whole.decided >= end
    rest_state = ScanState(
        reply_pending=False, line_start=text[end - 1] == "\n" if end else line_start
    )
    rest = scan(TABLE, text[end:], rest_state, context)
    assert rest.decided + end == whole.decided
    assert [(b.start + end, b.end + end, b.calls) for b in rest.blocks] == [
        (b.start, b.end, b.calls) for b in whole.blocks
    ]
    assert rest.state == whole.state


@settings(max_examples=300, deadline=None)
@given(
    st.lists(texts, min_size=1, max_size=4).map("".join),
    st.integers(min_value=1, max_value=9),
    st.integers(min_value=1, max_value=60),
)
def test_a_batch_gives_what_its_events_give(text: str, size: int, batch: int) -> None:
    """Markdown, prose and markup in any mix, any deltas, any batches: ``feed_batch`` (which
    passes ordinary text without a scan) gives the text and calls of ``feed``."""
    events = events_of([text[i : i + size] for i in range(0, len(text), size)])

    def run(batch_size: int) -> tuple[str, list[tuple[str, object, object]]]:
        out = run_steps([TextCallStage(None, TOOLS)], events, batch=batch_size)
        others = [
            (type(e).__name__, getattr(e, "name", None), getattr(e, "arguments_raw", None))
            for e in out
            if not isinstance(e, TextDelta)
        ]
        return visible_text(out), others

    assert run(batch) == run(0)
