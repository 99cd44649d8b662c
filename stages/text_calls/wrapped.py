"""Families whose calls are a JSON call or list, or a pythonic list, between markers: one reader,
driven by one row of data per family (the rows are in ``families.py``).

A row says what a family writes around its calls, and nothing else differs:

- ``opener``, then ``then`` (markers that must follow it, blanks allowed between):
  ``<tool_call>``; ``<|action_start|>`` then ``<|plugin|>``; ``Action:`` then ```` ```json ````;
- the body: JSON (a call object and/or a list of them, in the row's :class:`CallShape`), or
  pythonic keyword calls (a list ``[f(a=1)]`` and/or one call per line), or either;
- ``closer`` (``""``: none, the call ends where its body ends), and whether the server may
  leave it out (``closer_optional``: it is a stop token, or the server's parser reads the
  call without it);
- ``end_tokens``: end-of-turn tokens that may follow and belong to the markup
  (``<|END_OF_TURN_TOKEN|>`` after Cohere's ``<|END_ACTION|>``): the reader's ``end_tokens``,
  which the scanner takes into the block;
- ``tail_only``: the block counts only where nothing but blanks and other blocks follow it;
- a few rows write more around their calls, each a field with a default that means "none":
  ``several`` (call objects one after the other, MiniMax-M1's one a line), ``name_end`` and
  ``id_end`` (the name, and a call id before it, written in the markup before an arguments
  object: Solar Open, PLaMo 3, Functionary v3.2), and ``group_open`` / ``group_close`` (a
  wrapper around every call of the turn, each call in its own ``opener`` ... ``closer``:
  K2 Horizon, Solar Open, PLaMo 3).

How the end of a block is decided, the same for every row:

- the body is read by JSON's (or Python's) rules, never by searching for the closer, so a
  closer inside a string is text of the string;
- the closer follows: the block is closed;
- the text ends after the body (final) and the closer may be left out: the block is not
  closed and its calls are whole (the stage cuts them when the turn hit its token limit);
  the closer may not be left out: the markup is cut, so is the call written last;
- an end token follows instead of an optional closer (or of no closer): the model ended its
  turn, the block is closed;
- anything else follows: not a call (the text is ordinary text).
"""

from __future__ import annotations

import re
from typing import Literal

import msgspec

from ._json import value_end
from ._names import TOOL_NAME_PATTERN
from ._reading import (
    NEED_MORE,
    Found,
    ReadContext,
    ReadResult,
    Skip,
    TextCall,
    TextCallReader,
    _NeedMore,
    cut_last,
    expect,
    grows_into,
    skip_blanks,
)
from ._shapes import OPENAI_CALL, CallShape, call_list_or_skip
from ._unbalanced import unbalanced_arguments, unbalanced_calls
from .pythonic import read_pythonic_calls

__all__ = ["WrappedFamily", "WrappedReader", "read_group", "read_wrapped", "wrapped_reader"]

Grammar = Literal["json", "pythonic", "json-or-pythonic"]


class WrappedFamily(msgspec.Struct, frozen=True, gc=False):
    """One family's markers around its calls (see the module docstring)."""

    family: str
    opener: str
    then: tuple[str, ...] = ()
    grammar: Grammar = "json"
    #: A list may hold the calls (``[{...}, {...}]``, ``[f(), g()]``).
    lists: bool = True
    #: One call may stand alone (a JSON object; pythonic calls one per line).
    bare: bool = True
    shape: CallShape = OPENAI_CALL
    closer: str = ""
    closer_optional: bool = False
    end_tokens: tuple[str, ...] = ()
    tail_only: bool = True
    #: Several call objects one after the other, blanks between (MiniMax-M1).
    several: bool = False
    #: The name stands in the markup, before an arguments object, and ends here (Solar Open's
    #: ``<|tool_call:args|>``, Functionary v3.2's line feed); the body is then the arguments.
    name_end: str = ""
    #: A call id stands before the name and ends here (Solar Open's ``<|tool_call:name|>``).
    id_end: str = ""
    #: A wrapper around the turn's calls (K2 Horizon's ``<ifm|tool_calls>``), each call in
    #: ``opener`` ... ``closer`` inside it; a call may also stand without it.
    group_open: str = ""
    group_close: str = ""
    #: The group's closer may be left out (it is a stop token: Solar Open's ``<|calls|>``).
    group_close_optional: bool = False


_ID = re.compile(r"[\w.\-]*+")


def read_wrapped(text: str, start: int, context: ReadContext, row: WrappedFamily) -> ReadResult:
    """The block at ``text[start:]`` (``row.opener`` is there), by ``row``'s markers."""
    index = start + len(row.opener)
    for marker in row.then:
        index = skip_blanks(text, index)
        present = expect(text, index, marker, context.final)
        if present is not True:
            return present or None
        index += len(marker)
    if row.name_end:
        return _read_named(text, start, index, context, row)
    index = skip_blanks(text, index)
    if index >= len(text):
        return None if context.final else NEED_MORE
    json_body = _json_body(text, index, context, row)
    if isinstance(json_body, _NeedMore):
        return json_body
    if json_body:
        if not (row.lists if text[index] == "[" else row.bare or row.several):
            return None
        body = call_list_or_skip(text, index, context, row.shape)
        if row.several and text[index] == "{" and isinstance(body, tuple):
            body = _more_objects(text, body, context, row)
    elif row.grammar == "json":
        return None
    else:
        bracketed = text[index] == "["
        if not (row.lists if bracketed else row.bare):
            return None
        body = read_pythonic_calls(text, index, context, bracketed=bracketed)
    if json_body and row.closer and (not isinstance(body, tuple) or body[0][-1].cut):
        # Complete markup around a call whose JSON lacks a closing bracket (issue 27): a
        # call, rejected (``_unbalanced``), not text and not cut; otherwise the body's answer.
        broken = unbalanced_calls(text, index, row.closer, context, row.shape)
        if broken is not None:
            return _close(text, start, broken[1], broken[0], context, row, json_body=True)
    if not isinstance(body, tuple):
        return body
    calls, end = body
    if calls[-1].cut:
        return Found(start, len(text), calls, tail_only=row.tail_only, closed=False)
    return _close(text, start, end, calls, context, row, json_body=json_body)


def _more_objects(
    text: str, first: tuple[tuple[TextCall, ...], int], context: ReadContext, row: WrappedFamily
) -> tuple[tuple[TextCall, ...], int] | ReadResult:
    """The call objects that follow the first one, blanks between (``row.several``); any
    object that is not a call makes the whole body none (some other JSON)."""
    calls, end = first
    while not calls[-1].cut:
        index = skip_blanks(text, end)
        if index >= len(text) or text[index] != "{":
            break
        more = call_list_or_skip(text, index, context, row.shape)
        if not isinstance(more, tuple):
            return more if isinstance(more, _NeedMore) else None
        calls, end = (*calls, *more[0]), more[1]
    return calls, end


def _read_named(
    text: str, start: int, index: int, context: ReadContext, row: WrappedFamily
) -> ReadResult:
    """A call whose name (and id) stand in the markup at ``index``, then ``row.name_end``,
    then its arguments object. A name is read whole or not at all: the text ending in it or
    in the marker after it is no call yet."""
    final = context.final
    if row.id_end:
        index = _ID.match(text, index).end()  # type: ignore[union-attr]  # matches ""
        present = expect(text, index, row.id_end, final)
        if present is not True:
            return present or None
        index += len(row.id_end)
    name = TOOL_NAME_PATTERN.match(text, index)
    if name is None:
        return NEED_MORE if index >= len(text) and not final else None
    present = expect(text, name.end(), row.name_end, final)
    if present is not True:
        return present or None
    if not context.offered(name.group()):
        return None
    index = skip_blanks(text, name.end() + len(row.name_end))
    if index >= len(text):
        if not final:
            return NEED_MORE
        call = TextCall(name.group(), "", cut=True)
        return Found(start, len(text), (call,), tail_only=row.tail_only, closed=False)
    if text[index] != "{":
        return None
    end = value_end(text, index)
    if end is None and row.closer:
        # The closer after arguments missing a closing bracket (issue 27): a call, rejected.
        broken = unbalanced_arguments(text, index, row.closer)
        if broken is not None:
            call = TextCall(name.group(), broken[0], unbalanced=True)
            return _close(text, start, broken[1], (call,), context, row, json_body=True)
    if end is None:
        if not final:
            return NEED_MORE
        call = TextCall(name.group(), text[index:], cut=True)
        return Found(start, len(text), (call,), tail_only=row.tail_only, closed=False)
    calls = (TextCall(name.group(), text[index:end]),)
    return _close(text, start, end, calls, context, row, json_body=True)


def read_group(text: str, start: int, context: ReadContext, row: WrappedFamily) -> ReadResult:
    """The group at ``text[start:]`` (``row.group_open`` is there): one or more of the row's
    blocks, blanks between, then ``row.group_close``."""
    final = context.final
    index = start + len(row.group_open)
    calls: list[TextCall] = []
    while True:
        index = skip_blanks(text, index)
        closing = expect(text, index, row.group_close, final)
        if closing is True:
            if not calls:
                return None
            end = index + len(row.group_close)
            return Found(start, end, tuple(calls), tail_only=row.tail_only)
        opening = expect(text, index, row.opener, final)
        if isinstance(closing, _NeedMore) or isinstance(opening, _NeedMore):
            return NEED_MORE
        if opening is False:
            rest = text[index:]
            if not calls or not (row.group_close.startswith(rest) or row.opener.startswith(rest)):
                return None  # something else in the group: not this row's markup
            # The final text ends after a whole call (or inside the marker after it): the
            # group's closer never came.
            if not row.group_close_optional or rest:
                calls = list(cut_last(calls))
            return Found(start, len(text), tuple(calls), tail_only=row.tail_only, closed=False)
        block = read_wrapped(text, index, context, row)
        if not isinstance(block, Found):
            return block if isinstance(block, _NeedMore) else None
        calls.extend(block.calls)
        if block.end >= len(text) and not block.closed:
            # Cut inside the call, or after it with its optional closer left out.
            if not (calls[-1].cut or row.group_close_optional):
                calls = list(cut_last(calls))
            return Found(start, len(text), tuple(calls), tail_only=row.tail_only, closed=False)
        index = block.end


def _json_body(text: str, index: int, context: ReadContext, row: WrappedFamily) -> bool | _NeedMore:
    """Whether the body at ``index`` is read as JSON (rather than as pythonic calls)."""
    first = text[index]
    if row.grammar == "pythonic" or first not in "{[":
        return False
    if first == "{" or row.grammar == "json":
        return True
    inside = skip_blanks(text, index + 1)  # "[": a list of objects, or of pythonic calls
    if inside >= len(text):
        return NEED_MORE if not context.final else True
    return text[inside] in "{]"


def _close(
    text: str,
    start: int,
    end: int,
    calls: tuple[TextCall, ...],
    context: ReadContext,
    row: WrappedFamily,
    *,
    json_body: bool,
) -> ReadResult:
    """The block's end after its complete body at ``[..., end)``. An end token after the block
    is taken into its markup by the scanner (``TextCallReader.end_tokens``)."""
    after = skip_blanks(text, end)
    if row.closer:
        closed = expect(text, after, row.closer, context.final)
        if isinstance(closed, _NeedMore):
            return closed
        if closed:
            return Found(start, after + len(row.closer), calls, tail_only=row.tail_only)
    if after >= len(text):
        if not context.final and (row.closer or row.end_tokens):
            return NEED_MORE  # the closer or an end token may still come
        if row.closer and not row.closer_optional:
            # The closing marker never came: the markup is cut, so is the call written last.
            return Found(start, len(text), cut_last(calls), tail_only=row.tail_only, closed=False)
        return Found(start, end, calls, tail_only=row.tail_only, closed=False)
    if not row.closer or row.closer_optional:
        ended = _end_token_at(text, after, context, row)
        if isinstance(ended, _NeedMore):
            return ended
        if ended:
            # The model ended its turn right after the body: the block is closed.
            return Found(start, end, calls, tail_only=row.tail_only)
        if not row.closer:
            # No end marker: the block is the body; what follows decides whether it counts.
            return Found(start, end, calls, tail_only=row.tail_only, closed=False)
    # Something else follows where the closer belongs: not this family's markup. A JSON
    # body is one value by JSON's rules, so nothing inside it opens a call.
    return Skip(end) if json_body else None


def _end_token_at(
    text: str, index: int, context: ReadContext, row: WrappedFamily
) -> bool | _NeedMore:
    """Whether one of the row's end tokens stands at ``index`` (:data:`NEED_MORE` while the
    text may still grow into one)."""
    if any(text.startswith(token, index) for token in row.end_tokens):
        return True
    if not context.final and grows_into(text[index:], row.end_tokens):
        return NEED_MORE
    return False


class WrappedReader(TextCallReader):
    """The reader of one :class:`WrappedFamily` row (one subclass per row: ``family`` and
    ``openers`` are class attributes of a reader)."""

    row: WrappedFamily

    def read(self, text: str, start: int, context: ReadContext) -> ReadResult:
        """The row's block (or group of blocks) at ``start``."""
        row = self.row
        if row.group_open and text.startswith(row.group_open, start):
            return read_group(text, start, context, row)
        return read_wrapped(text, start, context, row)


def wrapped_reader(row: WrappedFamily) -> WrappedReader:
    """A reader for ``row``."""
    cls = type(
        f"WrappedReader[{row.family} {row.opener}]",
        (WrappedReader,),
        {
            "family": row.family,
            "openers": (row.opener, row.group_open) if row.group_open else (row.opener,),
            "end_tokens": row.end_tokens,
            "row": row,
            "__slots__": (),
        },
    )
    reader: WrappedReader = cls()
    return reader
