"""MiniMax M3: XML calls whose values nest, every tag behind MiniMax's namespace token.

The template (llama.cpp ``models/templates/MiniMax-M3.jinja``, its ``to_xml`` macro) writes
(``NS`` is ``]<]minimax[>[``, one line in the text)::

    NS<tool_call>
    NS<invoke name="NAME">NS<KEY>text NS</KEY>
    NS<LIST>NS<item>NS<a>1NS</a>NS</item>NS</LIST>NS</invoke>
    NS</tool_call>

A parameter is an element named by its key: its content is text, or elements (an object's
members, or a list's ``item`` elements). This is not the XML-parameter grammar of
``xml_format.py`` (a value there is text up to its closing tag), so it has a reader of its
own, as llama.cpp (``common/parsers/minimax-m3.cpp``, format ``PEG_MINIMAX_M3``) and vLLM
(``minimax_m3_tool_parser.py``: "not M2 with renamed tags") have.

A leaf's text is typed by the schema at its place (``_values.typed_value``); an element with
no content is ``[]`` or ``{}`` where the schema says it is a list or an object (the template
writes an empty list or object that way), else ``""``. Elements are a list when the schema
says so, an object when it says so, and otherwise a list exactly when every one is an
``item``, as the template writes lists. Text mixed with elements, a key given twice, or
nesting deeper than 32 is no call. A block cut before its close runs nothing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from ...core.json_text import json_text
from ._reading import (
    NEED_MORE,
    Found,
    ReadContext,
    ReadResult,
    TextCall,
    TextCallReader,
    _NeedMore,
    grows_into,
    skip_blanks,
)
from ._values import typed_value

__all__ = ["MiniMaxM3Reader"]

NS: Final = "]<]minimax[>["
_BLOCK, _BLOCK_CLOSE = NS + "<tool_call>", NS + "</tool_call>"
_INVOKE = re.compile(re.escape(NS) + r'<invoke name="([^"<>\n]+)">')
_INVOKE_CLOSE = NS + "</invoke>"
_ELEMENT = re.compile(re.escape(NS) + r"<([^\s<>/\"]+)>")
_MAX_DEPTH: Final = 32
_WINDOW: Final = 256


class _Ended:
    """The final text ended inside the block."""

    __slots__ = ()


_ENDED: Final = _Ended()
_Result = tuple[Any, int] | _Ended | _NeedMore | None


def _ends_in(text: str, index: int, literals: tuple[str, ...]) -> bool:
    """The text ends at ``index``, or inside a tag (one of ``literals``, or an element's
    opening tag) begun there."""
    rest = text[index : index + _WINDOW]
    if index + len(rest) < len(text):
        return False
    if grows_into(rest, literals):
        return True
    opening = NS + "<"
    return opening.startswith(rest) or (rest.startswith(opening) and ">" not in rest[len(NS) :])


def _cut(start: int, text: str, calls: list[TextCall]) -> Found:
    """The final text ended inside the block: no call in it runs (its close never came)."""
    cut = tuple(TextCall(call.name, call.arguments, cut=True) for call in calls)
    return Found(start, len(text), cut, tail_only=True, closed=False)


def _kind(schema: Any) -> str | None:
    """The one type ``schema`` declares (``null`` besides it allowed), if it is one."""
    if not isinstance(schema, Mapping):
        return None
    declared = schema.get("type")
    if isinstance(declared, list):
        others = [kind for kind in declared if kind != "null"]
        declared = others[0] if len(others) == 1 else None
    return declared if isinstance(declared, str) else None


def _member_schema(schema: Any, key: str, as_list: bool) -> Any:
    if not isinstance(schema, Mapping):
        return None
    if as_list:
        return schema.get("items")
    properties = schema.get("properties")
    return properties.get(key) if isinstance(properties, Mapping) else None


class MiniMaxM3Reader(TextCallReader):
    """A MiniMax M3 ``NS<tool_call>`` block, every call in it."""

    family = "minimax-m3"
    openers = (_BLOCK,)
    end_tokens = ("[e~[",)

    def read(self, text: str, start: int, context: ReadContext) -> ReadResult:
        """The block at ``start``: every call in it, or none."""
        final = context.final
        index = skip_blanks(text, start + len(_BLOCK))
        calls: list[TextCall] = []
        while True:
            invoke = _INVOKE.match(text, index)
            if invoke is None:
                if text.startswith(_BLOCK_CLOSE, index) and calls:
                    return Found(start, index + len(_BLOCK_CLOSE), tuple(calls), tail_only=True)
                if not _ends_in(text, index, (_BLOCK_CLOSE,)):
                    return None
                if not final:
                    return NEED_MORE
                return _cut(start, text, calls) if calls else None
            name = invoke.group(1)
            if not context.offered(name):
                return None
            schema = {"type": "object", "properties": context.property_schemas(name)}
            value = self._members(text, invoke.end(), _INVOKE_CLOSE, schema, 0, final, False)
            if value is NEED_MORE or value is None:
                return value
            if isinstance(value, _Ended):
                return _cut(start, text, [*calls, TextCall(name, "")])
            assert isinstance(value, tuple)
            calls.append(TextCall(name, json_text(value[0])))
            index = skip_blanks(text, value[1])

    def _content(
        self, text: str, at: int, key: str, schema: Any, depth: int, final: bool
    ) -> _Result:
        """The content of the element ``key`` opened just before ``at``, and where its
        closing tag ends."""
        close = NS + "</" + key + ">"
        tag = text.find(NS, at)
        if tag < 0:
            return _ENDED if final else NEED_MORE
        if text.startswith(close, tag):
            leaf = text[at:tag]
            kind = _kind(schema)
            if not leaf and kind in ("array", "object"):
                return ([] if kind == "array" else {}), tag + len(close)
            return typed_value(leaf, schema), tag + len(close)
        if _ends_in(text, tag, (close,)):
            return _ENDED if final else NEED_MORE
        if not text[at:tag].isspace() and at != tag:
            return None  # text, then a tag: mixed content
        kind = _kind(schema)
        as_list = None if kind not in ("array", "object") else kind == "array"
        return self._members(text, tag, close, schema, depth + 1, final, as_list)

    def _members(
        self,
        text: str,
        at: int,
        close: str,
        schema: Any,
        depth: int,
        final: bool,
        as_list: bool | None,
    ) -> _Result:
        """Elements from ``at`` up to ``close``: a list or an object (``as_list``; ``None``:
        a list exactly when every element is an ``item``)."""
        if depth > _MAX_DEPTH:
            return None
        members: list[tuple[str, Any]] = []
        index = skip_blanks(text, at)
        while not text.startswith(close, index):
            element = _ELEMENT.match(text, index)
            if element is None:
                if _ends_in(text, index, (close,)):
                    return _ENDED if final else NEED_MORE
                return None
            key = element.group(1)
            listed = as_list if as_list is not None else key == "item"
            member = self._content(
                text,
                element.end(),
                key,
                _member_schema(schema, key, listed),
                depth,
                final,
            )
            if not isinstance(member, tuple):
                return member
            members.append((key, member[0]))
            index = skip_blanks(text, member[1])
        end = index + len(close)
        if as_list is None:
            as_list = bool(members) and all(key == "item" for key, _ in members)
        if as_list:
            if any(key != "item" for key, _ in members):
                return None
            return [value for _, value in members], end
        values: dict[str, Any] = {}
        for key, value in members:
            if key in values:
                return None
            values[key] = value
        return values, end
