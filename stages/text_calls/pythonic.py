"""Pythonic calls: ``[get_weather(city="Paris"), get_time(tz='CET')]``.

Llama 3.2 / 4 (``pythonic`` templates) write the list as the whole reply (read here); LFM2,
Llama 4, OLMo 3 and Gemma 3 prompts put calls between markers, rows of ``families.py``
that read them with :func:`read_pythonic_calls`. Only keyword arguments are read: a
positional argument has no parameter name (``[f(x) for x in ...]``, ``[name(arg)](url)`` are
not calls). Each value is passed to the judge as written, under its keyword as a JSON key, so
the judge's Python-literal reading (never ``eval``) decides it: ``'CET'`` and ``True`` are
repaired (``python_literal``), a variable or an expression is rejected.
"""

from __future__ import annotations

import re

from ...core.json_text import json_string
from ._names import TOOL_NAME, TOOL_NAME_PATTERN
from ._reading import (
    NEED_MORE,
    Found,
    ReadContext,
    ReadResult,
    TextCall,
    TextCallReader,
    _NeedMore,
    cut_last,
    skip_blanks,
)

__all__ = ["PythonicReader", "read_pythonic_calls"]

_NAME = re.compile(rf"({TOOL_NAME})[ \t]*\(")
_KEYWORD = re.compile(r"([A-Za-z_]\w*)[ \t]*=(?!=)")
_VALUE_TOKEN = re.compile(
    r"""'[^'\\\n]*+(?:\\.[^'\\\n]*+)*+'|"[^"\\\n]*+(?:\\.[^"\\\n]*+)*+"|[\[\]{}(),'"]""",
    re.DOTALL,
)
_OPEN = frozenset("[{(")


class _Invalid(Exception):
    pass


class _Cut(Exception):
    pass


def _value_end(text: str, index: int) -> int:
    """Where the Python value at ``index`` ends (at a top-level ``,`` or ``)``)."""
    depth = 0
    for match in _VALUE_TOKEN.finditer(text, index):
        token = match.group()
        if len(token) > 1:
            continue
        if token in "'\"":
            raise _Cut if "\n" not in text[match.start() :] else _Invalid
        if token in _OPEN:
            depth += 1
        elif depth == 0 and token in ",)":
            return match.start()
        elif token in ")]}":
            depth -= 1
            if depth < 0:
                raise _Invalid
    raise _Cut


def _read_call(text: str, index: int, context: ReadContext) -> tuple[TextCall, int]:
    """One ``NAME(key=value, ...)`` at ``index``; raises ``_Invalid`` or ``_Cut``."""
    head = _NAME.match(text, index)
    if head is None:
        if not text[index:] or TOOL_NAME_PATTERN.fullmatch(text[index:]):
            raise _Cut  # the text ends inside the name (``Calendar.``, ``mcp__fs-``)
        raise _Invalid
    name = head.group(1)
    if not context.offered(name):
        raise _Invalid
    index = skip_blanks(text, head.end())
    members: dict[str, str] = {}
    try:
        while True:
            if index >= len(text):
                raise _Cut
            if text[index] == ")":
                index += 1
                break
            keyword = _KEYWORD.match(text, index)
            if keyword is None:
                raise _Cut if text[index:].isidentifier() else _Invalid
            value_start = skip_blanks(text, keyword.end())
            value_end = _value_end(text, value_start)
            value = text[value_start:value_end].strip()
            if not value or keyword.group(1) in members:
                raise _Invalid
            members[keyword.group(1)] = value
            index = value_end
            if text[index] == ",":
                index = skip_blanks(text, index + 1)
    except _Cut:
        raise _CutCall(name) from None
    arguments = (
        "{"
        + ", ".join(
            f"{json_string(key)}: {value}" for key, value in members.items()
        )
        + "}"
    )
    return TextCall(name, arguments), index


class _CutCall(Exception):
    def __init__(self, name: str) -> None:
        self.name = name


def read_pythonic_calls(
    text: str, index: int, context: ReadContext, *, bracketed: bool
) -> tuple[tuple[TextCall, ...], int] | _NeedMore | None:
    """``[call, call]`` (``bracketed``) or calls one per line, from ``index``."""
    calls: list[TextCall] = []
    if bracketed:
        if not text.startswith("[", index):
            return None
        index = skip_blanks(text, index + 1)
    try:
        while True:
            if index >= len(text):
                raise _Cut
            call, index = _read_call(text, index, context)
            calls.append(call)
            index = skip_blanks(text, index)
            if bracketed:
                if index >= len(text):
                    raise _Cut
                if text[index] == "]":
                    return tuple(calls), index + 1
                if text[index] != ",":
                    return None
                index = skip_blanks(text, index + 1)
            elif index >= len(text) or not (text[index].isalpha() or text[index] == "_"):
                return tuple(calls), index
    except _Invalid:
        return None
    except (_Cut, _CutCall) as cut:
        if not context.final:
            return NEED_MORE
        if isinstance(cut, _CutCall):
            calls.append(TextCall(cut.name, "", cut=True))
        elif calls:
            return cut_last(calls), len(text)
        else:
            return None
        return tuple(calls), len(text)


class PythonicReader(TextCallReader):
    """A whole reply that is a Python list of keyword calls."""

    family = "pythonic"
    whole_reply = True

    def read(self, text: str, start: int, context: ReadContext) -> ReadResult:
        """The reply from its first non-blank character."""
        if not text.startswith("[", start):
            return None
        read = read_pythonic_calls(text, start, context, bracketed=True)
        if read is None or isinstance(read, _NeedMore):
            return read
        calls, end = read
        closed = not calls[-1].cut
        return Found(start, end, calls, tail_only=True, closed=closed)
