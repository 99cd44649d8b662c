"""The XML-parameter families as data: every row is a registered reader, and a new format is a
row, not a module. Each family's own cases are in its ``test_family_*.py``."""

from __future__ import annotations

import pytest

from toolwire.stages.text_calls import (
    readers_for,
    register_text_call_reader,
    registry,
    text_call_families,
)
from toolwire.stages.text_calls.xml_families import (
    DEEPSEEK_DSML,
    MINICPM5,
    QWEN3_CODER,
    XML_FAMILIES,
)
from toolwire.stages.text_calls.xml_format import QUOTED_NAME, XmlCallFormat, XmlTag
from toolwire.stages.text_calls.xml_reader import XmlParameterReader, xml_reader

from ._family_contract import TOOLS, runnable
from ._harness import run_text

#: A format no model writes: what a user adds for their own fine-tune.
TOY = XmlCallFormat(
    family="toy-xml",
    blocks=(("<calls>", "</calls>"),),
    invoke=XmlTag('<call name="', ">", quote='"', name=QUOTED_NAME),
    invoke_close="</call>",
    parameter=XmlTag('<arg name="', ">", quote='"', name=QUOTED_NAME),
    parameter_close="</arg>",
    end_tokens=("<|done|>",),
)
TOY_TEXT = '<calls><call name="get_weather"><arg name="n">2</arg></call></calls><|done|>'


@pytest.mark.parametrize("spec", XML_FAMILIES, ids=lambda spec: spec.family)
def test_every_row_is_a_registered_reader(spec: XmlCallFormat) -> None:
    assert spec.family in text_call_families()
    readers = [r for r in readers_for([spec.family]) if isinstance(r, XmlParameterReader)]
    assert spec in [reader.spec for reader in readers]
    reader = next(reader for reader in readers if reader.spec is spec)
    assert reader.openers == spec.openers
    assert reader.end_tokens == spec.end_tokens


def test_openers_come_from_the_row() -> None:
    """A call opens a block where a call may stand alone (Qwen's dropped wrapper)."""
    assert QWEN3_CODER.openers == ("<tool_call>", "<function=")
    assert MINICPM5.openers == ('<function name="',)
    assert DEEPSEEK_DSML.openers == (
        "<\uff5cDSML\uff5cfunction_calls>",
        "<\uff5cDSML\uff5ctool_calls>",
    )


def test_a_new_format_is_a_row(monkeypatch: pytest.MonkeyPatch) -> None:
    reader = xml_reader(TOY)
    turn, _ = run_text(["Sure.\n" + TOY_TEXT], TOOLS, families=[reader])
    assert [(c.name, c.arguments, c.text_family) for c in turn.runnable] == [
        ("get_weather", {"n": 2}, "toy-xml")
    ]
    assert turn.text == "Sure.\n"  # the end token is the block's markup
    assert runnable(TOY_TEXT) == []  # not a built-in family
    monkeypatch.setattr(registry, "_REGISTRY", {k: list(v) for k, v in registry._REGISTRY.items()})
    register_text_call_reader(reader)
    assert runnable(TOY_TEXT) == [("get_weather", {"n": 2})]


def test_a_tag_longer_than_a_tag_can_be_is_no_call() -> None:
    """A name runs at most a few hundred characters: past that the opener is text, decided
    without waiting for the rest (hostile text stays linear)."""
    text = "<tool_call>\n<function=" + "a" * 300 + ">\n</function>\n</tool_call>"
    assert run_text([text], TOOLS)[0].calls == ()


def test_the_reader_does_not_read_its_block_as_prose_inside_a_value() -> None:
    """A DSML value cannot hold a DSML tag: a block whose value runs into the next block's
    opener is no call, and the second block, read on its own, is."""
    d = "\uff5cDSML\uff5c"
    broken = (
        f'<{d}function_calls>\n<{d}invoke name="get_time">\n<{d}parameter name="n" string="false">1'
    )
    whole = (
        f'<{d}function_calls>\n<{d}invoke name="get_time">\n'
        f'<{d}parameter name="n" string="false">2</{d}parameter>\n'
        f"</{d}invoke>\n</{d}function_calls>"
    )
    assert runnable(broken + "\n" + whole) == [("get_time", {"n": 2})]
