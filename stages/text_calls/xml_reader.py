"""The one reader of every XML-parameter format (``xml_format.XmlCallFormat``).

``xml_reader(spec)`` gives the :class:`~toolwire.stages.text_calls.TextCallReader` of one
format. At an opener it reads the block: the wrapper (or a lone call, where the format allows
one), every call in it, each call's parameters, the wrapper's close and the family's end
tokens. It answers as every reader does (``_reading.py``):

- a block whose calls are all offered and all closed is :class:`Found`, each call's arguments
  one JSON object written from its parameters (a key given twice has no single reading: no
  call);
- a name that is not offered, or markup that leaves the grammar, is no call, for the whole
  block: a call is never picked out of a block that is not wholly calls;
- text that ends inside the block is :data:`NEED_MORE`; when the text is final, every call
  read in the block is cut and never runs (the wrapper never closed: even a call closed before
  the cut is part of markup the model did not finish), or no call when no name was read whole.

The family's end tokens (``XmlCallFormat.end_tokens``) are the reader's ``end_tokens``: the
scanner takes them into the block's markup, as for every family.

Each part of the block is matched once from where the last one ended, so a read is linear in
the text it reads.
"""

from __future__ import annotations

import re
from typing import Any, Final, Literal, cast

import msgspec

from ...core.json_text import json_text
from ._reading import (
    NEED_MORE,
    Found,
    ReadContext,
    ReadResult,
    TextCall,
    TextCallReader,
    _NeedMore,
    expect,
    grows_into,
    skip_blanks,
)
from ._values import arguments_json, typed_value
from .xml_format import XmlCallFormat, XmlTag

__all__ = ["XmlParameterReader", "xml_reader"]

#: Blank-separated ``key="value"`` attributes after a name, then blanks.
_ATTRIBUTES = r'((?:\s+[\w:.\-]+="[^"<>\n]*")*)\s*'
_ATTRIBUTE = re.compile(r'([\w:.\-]+)="([^"<>\n]*)"')
#: How far past its opener a tag is looked for before the text is known to hold none.
_WINDOW: Final = 256
_CDATA_OPEN, _CDATA_CLOSE = "<![CDATA[", "]]>"


class _Ended:
    """The final text ended inside a tag or a value (it would have been ``NEED_MORE``)."""

    __slots__ = ()


_ENDED: Final = _Ended()


class _Cut(msgspec.Struct, frozen=True, gc=False):
    """The final text ended inside the call named ``name``."""

    name: str


class _Call(msgspec.Struct, frozen=True, gc=False):
    """A call read up to ``end``; ``closed``: its own closing tag was there."""

    name: str
    #: ``(key, value text, what the markup says the value is)``: ``True`` JSON, ``False``
    #: text, ``None`` nothing (it is typed by the schema).
    pairs: tuple[tuple[str, str, bool | None], ...]
    end: int
    closed: bool


class _Tag:
    """An :class:`XmlTag`, compiled."""

    __slots__ = ("literal", "pattern")

    def __init__(self, tag: XmlTag) -> None:
        attributes = _ATTRIBUTES if tag.attributes else ""
        self.literal = tag.open
        self.pattern = re.compile(
            re.escape(tag.open)
            + tag.name
            + re.escape(tag.quote)
            + attributes
            + re.escape(tag.close)
        )

    def match(
        self, text: str, index: int, final: bool
    ) -> re.Match[str] | _NeedMore | _Ended | None:
        """The tag at ``index``, or whether the text ends inside one."""
        match = self.pattern.match(text, index)
        if match is not None:
            return match
        rest = text[index : index + _WINDOW]
        if len(rest) == _WINDOW:
            return None
        # The text ends inside the opening literal, or after it and before any ``>`` (a ``>``
        # would have ended the tag: it matched, or it is malformed for good).
        if self.literal.startswith(rest) or (
            rest.startswith(self.literal) and ">" not in rest[len(self.literal) :]
        ):
            return _ENDED if final else NEED_MORE
        return None


class XmlParameterReader(TextCallReader):
    """Reads one :class:`XmlCallFormat`; :func:`xml_reader` gives one per format."""

    def __init__(self, spec: XmlCallFormat) -> None:
        self.spec = spec
        self._invoke = _Tag(spec.invoke)
        self._parameter = _Tag(spec.parameter)
        #: What ends a value: its close and the tags that also end an open one (Qwen); in a
        #: family with no such tags, its other structural tags, which a value cannot hold (no
        #: call then). Either way no value runs on past the next block's opener, so a run of
        #: unclosed openers costs each read a few characters, not the rest of the text.
        structural = (
            ()
            if spec.value_ends
            else (
                *(block_open for block_open, _ in spec.blocks),
                *((spec.call_prefix,) if spec.call_prefix else ()),
                spec.invoke.open,
                spec.invoke_close,
            )
        )
        ends = dict.fromkeys((spec.parameter_close, *spec.value_ends, *structural))
        self._value_end = re.compile("|".join(re.escape(end) for end in ends))
        #: What may still stand after a call's last parameter: its close, and (lenient) the
        #: wrapper's close in its place.
        closers = [spec.invoke_close]
        if spec.lenient_closes:
            closers.extend(close for _, close in spec.blocks)
        self._closers = tuple(closers)
        self._call_literal = spec.call_prefix or spec.invoke.open

    def read(self, text: str, start: int, context: ReadContext) -> ReadResult:
        """The block at ``start``: every call in it, or none."""
        spec = self.spec
        final = context.final
        wrapper: str | None = None
        index = start
        for block_open, block_close in spec.blocks:
            if text.startswith(block_open, start):
                wrapper, index = block_close, skip_blanks(text, start + len(block_open))
                break
        else:
            if spec.blocks and not spec.block_optional:
                return None
        calls: list[TextCall] = []
        while True:
            call = self._call(text, index, context)
            if not isinstance(call, _Call):
                if isinstance(call, _Cut):
                    return self._cut(start, text, (*calls, TextCall(call.name, "")))
                if call is _ENDED and calls:  # cut inside a later call's tag
                    return self._cut(start, text, calls)
                return NEED_MORE if call is NEED_MORE else None
            closing: int | _Ended | _NeedMore | None = None
            if not call.closed:
                # Lenient: the call's close is missing; the wrapper's close must stand for it.
                closing = self._close(text, call.end, wrapper, final)
                if closing is _ENDED:
                    return self._cut(start, text, (*calls, TextCall(call.name, "")))
                if not isinstance(closing, int):
                    return NEED_MORE if closing is NEED_MORE else None
            arguments = self._arguments(call, context)
            if arguments is None:
                return None
            calls.append(TextCall(call.name, arguments))
            if isinstance(closing, int):
                end = closing
                break
            index = call.end
            if wrapper is not None and not spec.lenient_closes:
                after = skip_blanks(text, index)
                more = expect(text, after, self._call_literal, final)
                if more is NEED_MORE:
                    return NEED_MORE
                if more:
                    index = after
                    continue
            closing = self._close(text, index, wrapper, final)
            if closing is NEED_MORE:
                return NEED_MORE
            if isinstance(closing, int):
                end = closing
            elif wrapper is None or spec.lenient_closes:
                end = index  # no wrapper, or (Qwen) its close missing after a closed call
            elif closing is _ENDED:
                return self._cut(start, text, calls)
            else:
                return None
            break
        return self._found(start, end, tuple(calls))

    def _found(self, start: int, end: int, calls: tuple[TextCall, ...]) -> Found:
        return Found(start, end, calls, tail_only=self.spec.tail_only)

    def _cut(self, start: int, text: str, calls: tuple[TextCall, ...] | list[TextCall]) -> Found:
        """The final text ended inside the block: no call in it runs. The wrapper never
        closed, so even a call closed before the cut is part of markup the model did not
        finish (the turn's truncation is the evidence the judge reports)."""
        cut = tuple(TextCall(call.name, call.arguments, cut=True) for call in calls)
        return Found(start, len(text), cut, tail_only=self.spec.tail_only, closed=False)

    def _call(
        self, text: str, index: int, context: ReadContext
    ) -> _Call | _Cut | _Ended | _NeedMore | None:
        """One call at ``index``: its tag, its parameters, its close."""
        spec = self.spec
        final = context.final
        if spec.call_prefix:
            prefix = _literal(text, index, spec.call_prefix, final)
            if prefix is not True:
                return prefix
            index = skip_blanks(text, index + len(spec.call_prefix))
        tag = self._invoke.match(text, index, final)
        if not isinstance(tag, re.Match):
            return tag
        name = tag.group(1)
        if not context.offered(name):
            return None
        pairs: list[tuple[str, str, bool | None]] = []
        index = skip_blanks(text, tag.end())
        while True:
            parameter = self._parameter.match(text, index, final)
            if not isinstance(parameter, re.Match):
                if parameter is None:
                    break
                return _Cut(name) if parameter is _ENDED else NEED_MORE
            value_at = parameter.end()
            if spec.value_open:
                value_at = skip_blanks(text, value_at)
                opened = _literal(text, value_at, spec.value_open, final)
                if opened is not True:
                    return _Cut(name) if opened is _ENDED else opened
                value_at += len(spec.value_open)
            value = self._value(text, value_at, final)
            if not isinstance(value, tuple):
                return _Cut(name) if value is _ENDED else value
            pairs.append((parameter.group(1), value[0], self._written_as(parameter)))
            index = skip_blanks(text, value[1])
        if text.startswith(spec.invoke_close, index):
            end = index + len(spec.invoke_close)
            if spec.call_suffix:
                after = skip_blanks(text, end)
                suffix = _literal(text, after, spec.call_suffix, final)
                if suffix is not True:
                    return _Cut(name) if suffix is _ENDED else suffix
                end = after + len(spec.call_suffix)
            return _Call(name, tuple(pairs), end, closed=True)
        if _ends_in(text, index, self._closers):
            return _Cut(name) if final else NEED_MORE
        if spec.lenient_closes:
            return _Call(name, tuple(pairs), index, closed=False)
        return None  # something else inside the call: not this grammar

    def _value(
        self, text: str, at: int, final: bool
    ) -> tuple[str, int] | _Ended | _NeedMore | None:
        """A parameter's value from ``at``, and where the text resumes after it."""
        spec = self.spec
        if spec.cdata:
            begin = skip_blanks(text, at)
            if text.startswith(_CDATA_OPEN, begin):
                inside = begin + len(_CDATA_OPEN)
                close = text.find(_CDATA_CLOSE, inside)
                if close < 0:
                    return _ENDED if final else NEED_MORE
                after = skip_blanks(text, close + len(_CDATA_CLOSE))
                closing = _literal(text, after, spec.parameter_close, final)
                if closing is not True:
                    return closing
                return text[inside:close], after + len(spec.parameter_close)
        found = self._value_end.search(text, at)
        if found is None:
            return _ENDED if final else NEED_MORE
        if found.group() == spec.parameter_close:
            return _trim(text[at : found.start()], spec), found.end()
        if found.group() in spec.value_ends:  # an open value, closed by the next tag
            return _trim(text[at : found.start()], spec), found.start()
        return None  # another tag of the family inside a value: not this grammar

    def _written_as(self, parameter: re.Match[str]) -> bool | None:
        """What the parameter's attributes say its value is: JSON, text, or nothing."""
        attribute = self.spec.type_attribute
        if not attribute or (parameter.lastindex or 0) < 2:
            return None
        for key, value in _ATTRIBUTE.findall(parameter.group(2)):
            if key == attribute:
                return value not in self.spec.text_types
        return None

    def _close(
        self, text: str, index: int, wrapper: str | None, final: bool
    ) -> int | _Ended | _NeedMore | None:
        """Where the wrapper's close after ``index`` ends; :data:`_ENDED` when the final text
        ends before or inside it; ``None`` when something else stands there."""
        close = wrapper
        if close is None and self.spec.lenient_closes and self.spec.blocks:
            close = self.spec.blocks[0][1]  # Qwen: a lone call's stray ``</tool_call>``
        after = skip_blanks(text, index)
        if close is None:
            return _ENDED if after >= len(text) else None
        closing = _literal(text, after, close, final)
        return after + len(close) if closing is True else closing

    def _arguments(self, call: _Call, context: ReadContext) -> str | None:
        """The call's arguments as one JSON object; ``None`` when a key repeats."""
        properties = context.property_schemas(call.name)
        if not self.spec.type_attribute:
            return arguments_json([(key, value) for key, value, _ in call.pairs], properties)
        arguments: dict[str, Any] = {}
        for key, value, written_as in call.pairs:
            if key in arguments:
                return None
            if written_as is False:
                arguments[key] = value
            elif written_as:
                arguments[key] = _json_value(value, properties.get(key))
            else:
                arguments[key] = typed_value(value, properties.get(key))
        return json_text(arguments)


def _literal(
    text: str, index: int, literal: str, final: bool
) -> Literal[True] | _Ended | _NeedMore | None:
    """``True`` when ``literal`` stands at ``index``; :data:`NEED_MORE` / :data:`_ENDED` when
    the text ends there or inside it; ``None`` otherwise."""
    found = expect(text, index, literal, final)
    if isinstance(found, _NeedMore):
        return found
    if found:
        return True
    return _ENDED if _ends_in(text, index, (literal,)) else None


def _json_value(text: str, schema: Any) -> Any:
    """A value the markup says is JSON, as JSON; one that is not JSON is text typed by the
    schema, as any other (vLLM's DSML and Kimi K3 parsers keep it as it is)."""
    try:
        return msgspec.json.decode(text)
    except (msgspec.DecodeError, UnicodeEncodeError):  # (a lone surrogate)
        return typed_value(text, schema)


def _trim(value: str, spec: XmlCallFormat) -> str:
    if spec.trim == "line":
        if value.startswith("\n"):
            value = value[1:]
        if value.endswith("\n"):
            value = value[:-1]
        return value
    if spec.trim == "lines":
        return value.strip("\n")
    if spec.trim == "blanks":
        return value.strip()
    return value


def _ends_in(text: str, index: int, literals: tuple[str, ...]) -> bool:
    """The text ends at ``index``, or inside one of ``literals`` begun there."""
    rest = text[index : index + _WINDOW]
    if index + len(rest) < len(text):
        return False
    return grows_into(rest, literals)


def xml_reader(spec: XmlCallFormat) -> XmlParameterReader:
    """The reader of ``spec`` (a class of its own: a reader's ``family`` and ``openers``
    belong to its class)."""
    namespace = {"family": spec.family, "openers": spec.openers, "end_tokens": spec.end_tokens}
    reader_class = type(f"XmlReader[{spec.family}]", (XmlParameterReader,), namespace)
    return cast("type[XmlParameterReader]", reader_class)(spec)
