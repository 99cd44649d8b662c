"""What every text-call family must do, as tests a family's own module runs on its own cases.

A family's test module subclasses :class:`FamilyContract` (``class TestSeedOss(FamilyContract)``)
and sets its cases, written from the family's chat template, model card, its servers' parser
source or public reports (never from the servers' own parser test files), with the provenance
next to them. The tests run each case through the text-call stage and the judge, with every
registered family on (``_harness.run_text``):

- every ``calls`` text gives exactly its runnable calls, read by this family, and only when
  the family is chosen;
- every ``not_calls`` text gives no call at all (not even a rejected one) and stays the text;
- every proper prefix of a ``cut_texts`` text (each ends where its block closes), with a
  ``length`` finish and with ``stop``, gives no runnable call; once a name was read whole the
  cut call is reported, truncated;
- any split of any case's text gives the same turn as the text whole.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolwire.core.events import Finish
from toolwire.stages.text_calls import text_call_families

from ._harness import run_text, visible_text

__all__ = ["LENGTH", "SCHEMA", "TOOLS", "FamilyContract", "runnable"]

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "n": {"type": "integer"},
        "on": {"type": "boolean"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "opts": {"type": "object"},
        "note": {"type": "string"},
    },
}
#: The tools every family's cases may call (``delete_everything`` is never offered).
TOOLS: list[dict[str, Any]] = [
    {"type": "function", "function": {"name": name, "parameters": SCHEMA}}
    for name in ("get_weather", "get_time", "Calendar.create_event")
]
#: The turn was cut by the token limit.
LENGTH = Finish(
    reason="length", raw="length", truncated=True, evidence=("finish_reason",), cut_by="token_limit"
)
_STOP = Finish(reason="end_turn", raw="stop")

#: Runnable calls as ``(name, arguments)`` (a ``Sequence``: a module may write lists or tuples).
Calls = Sequence[tuple[str, Mapping[str, Any]]]


def runnable(text: str, **kwargs: Any) -> list[tuple[str, Any]]:
    """The runnable calls of ``text`` sent whole, as ``(name, arguments)``."""
    turn, _ = run_text([text], TOOLS, **kwargs)
    return [(call.name, call.arguments) for call in turn.runnable]


def _summary(chunks: list[str]) -> tuple[Any, ...]:
    turn, events = run_text(chunks, TOOLS)
    calls = [(c.name, c.arguments_raw, c.truncated, c.outcome, c.text_family) for c in turn.calls]
    return calls, visible_text(events), turn.raw_text, turn.stop_reason


class FamilyContract:
    """Subclass it in a family's test module (a ``Test...`` name) and set the cases."""

    #: The family's name, as ``text_calls=[...]`` names it.
    family: ClassVar[str]
    #: ``(text, runnable calls as (name, arguments))``.
    calls: ClassVar[Sequence[tuple[str, Sequence[tuple[str, object]]]]]
    #: Texts that hold no call: an unoffered name, markup quoted in prose, malformed markup.
    not_calls: ClassVar[Sequence[str]]
    #: Valid call texts, each ending where its block closes: every proper prefix is cut.
    cut_texts: ClassVar[Sequence[str]]

    def test_reads_its_calls(self) -> None:
        for text, expected in self.calls:
            turn, _ = run_text([text], TOOLS)
            assert [(c.name, c.arguments) for c in turn.runnable] == list(expected), text
            assert {call.text_family for call in turn.calls} == {self.family}, text
            assert turn.stop_reason == "tool_calls", text

    def test_read_only_when_chosen(self) -> None:
        text = self.calls[0][0]
        others = [name for name in text_call_families() if name != self.family]
        assert run_text([text], TOOLS, families=others)[0].runnable == ()
        assert runnable(text, families=[self.family]) == list(self.calls[0][1])

    def test_no_call_where_there_is_none(self) -> None:
        for text in self.not_calls:
            turn, _ = run_text([text], TOOLS)
            assert turn.calls == (), text
            assert turn.text == text

    def test_every_prefix_is_cut_and_never_runs(self) -> None:
        for text in self.cut_texts:
            assert runnable(text), text  # whole, it is a call
            named = False
            for size in range(len(text)):
                for finish in (LENGTH, _STOP):
                    turn, _ = run_text([text[:size]], TOOLS, finish=finish)
                    assert turn.runnable == (), (text[:size], finish.raw)
                    assert all(call.truncated for call in turn.calls), text[:size]
                named = named or bool(turn.calls)
            assert named, text  # a cut call with a whole name is reported, not silent

    # One test method, run once per family class: hypothesis sees one function called from
    # several instances ("differing executors"); each draws from its own class's texts.
    @settings(
        max_examples=150, deadline=None, suppress_health_check=[HealthCheck.differing_executors]
    )
    @given(st.data())
    def test_any_split_gives_the_same_turn(self, data: st.DataObject) -> None:
        texts = [text for text, _ in self.calls] + [*self.not_calls, *self.cut_texts]
        text = data.draw(st.sampled_from(texts))
        points = sorted(
            set(data.draw(st.lists(st.integers(0, len(text)), max_size=12), label="cuts"))
        )
        chunks = [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]
        assert _summary(chunks) == _summary([text])

    def test_one_character_at_a_time(self) -> None:
        texts = [text for text, _ in self.calls] + [*self.not_calls, *self.cut_texts]
        for text in texts:
            assert _summary(list(text)) == _summary([text]), text
