"""What a family reader is, and what it answers: the shared vocabulary of ``stages/text_calls``.

A reader reads one family's own tool-call markup at one position of the turn's text. It answers
with one of three things, and it may answer only what more text could not change:

- :class:`Found`: a block of markup from ``start`` to ``end`` holding one or more calls;
- :class:`Skip` (or ``None``): no call starts here; ordinary text resumes at ``resume``;
- :data:`NEED_MORE`: the text so far cannot tell (it ends inside the markup and is not final).

When the text is final, a block cut at the end is :class:`Found` with its last call ``cut``:
it is judged as truncated and never runs. A reader never guesses a name: a name that is not
offered in the request's tools means "no call here", whatever the markup looks like.
"""

from __future__ import annotations

import abc
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar, Final

import msgspec

__all__ = [
    "NEED_MORE",
    "Found",
    "ReadContext",
    "ReadResult",
    "Skip",
    "TextCall",
    "TextCallReader",
    "cut_last",
    "expect",
    "skip_blanks",
]


class TextCall(msgspec.Struct, frozen=True, gc=False):
    """One call read from text: its name and the arguments text the judge will read."""

    name: str
    #: The arguments as the judge reads them: the model's own JSON (or JSON-like) text, or, for
    #: families whose values are not JSON (XML parameters, keyword arguments), one JSON object
    #: written by the reader from exactly one reading of them.
    arguments: str
    #: The text ended inside this call: it is truncated and never runs.
    cut: bool = False
    #: Its family's markup is complete but its JSON does not balance inside it (closing
    #: brackets missing, ``_unbalanced``): ``arguments`` is the call as written, and it is
    #: rejected, never run, never completed.
    unbalanced: bool = False


class Found(msgspec.Struct, frozen=True, gc=False):
    """A block of a family's markup, ``[start, end)`` of the text, and the calls it holds."""

    start: int
    end: int
    calls: tuple[TextCall, ...]
    #: The block counts only when nothing but blanks and other blocks follow it to the end of
    #: the reply (markers that prose also uses, and a reply that is wholly a call object).
    tail_only: bool = False
    #: The family's own end marker closed the block (``</tool_call>``, ``<|call|>``...).
    closed: bool = True
    #: The family of the reader that found it (filled in by the stage's scanner).
    family: str = ""


class Skip(msgspec.Struct, frozen=True, gc=False):
    """No call here; the text up to ``resume`` is ordinary text (read by the family's rules)."""

    resume: int


class _NeedMore:
    __slots__ = ()

    def __repr__(self) -> str:
        return "NEED_MORE"


#: The text so far cannot tell: ask again with more text (or with ``final``).
NEED_MORE: Final = _NeedMore()

ReadResult = Found | Skip | _NeedMore | None


class ReadContext:
    """What a reader may consult: whether the text is final, and the offered tools."""

    __slots__ = ("_types", "final", "names")

    def __init__(
        self,
        names: frozenset[str],
        final: bool = False,
        property_types: Callable[[str], Mapping[str, Any]] | None = None,
    ) -> None:
        self.names = names
        self.final = final
        self._types = property_types

    def offered(self, name: str) -> bool:
        """Only names offered in the request's tools count."""
        return name in self.names

    def property_schemas(self, tool: str) -> Mapping[str, Any]:
        """The JSON Schema of each declared property of ``tool`` (empty when unknown)."""
        return self._types(tool) if self._types is not None else {}

    def at_final(self, final: bool) -> ReadContext:
        """The same context with ``final`` set."""
        if final == self.final:
            return self
        return ReadContext(self.names, final, self._types)


class TextCallReader(abc.ABC):
    """One family's reader. Subclass it and register it (``register_text_call_reader``).

    ``openers`` are the literal markers where the family's markup may start; the stage looks
    for them outside code fences, inline code and ``<think>`` blocks. A reader with
    ``whole_reply = True`` instead reads the reply as a whole, from its first character: its
    :class:`Found` is ``tail_only`` (the reply must be nothing but calls), unless the markup
    is special tokens prose never holds (harmony's header right after the prompt). ``read``
    must be linear in the text it reads and must answer only what more text cannot change
    (:data:`NEED_MORE` otherwise).
    """

    #: The family's name, as ``text_calls=[...]`` names it.
    family: ClassVar[str]
    #: The literal markers that may open the family's markup.
    openers: ClassVar[tuple[str, ...]] = ()
    #: Read only a reply that is wholly the family's markup (bare JSON, ``[f(x=1)]``...).
    whole_reply: ClassVar[bool] = False
    #: The family's end-of-turn tokens (``<|im_end|>``, ``<|eot_id|>``...): stop tokens, so a
    #: server usually swallows them, but one that does not stop on them leaves them as text.
    #: Written right after a block (blanks between allowed), one is part of the block's markup,
    #: not text after it (``_scanner``). Data, so that a family spec only lists its own.
    end_tokens: ClassVar[tuple[str, ...]] = ()

    @abc.abstractmethod
    def read(self, text: str, start: int, context: ReadContext) -> ReadResult:
        """Read the markup at ``text[start:]`` (an opener, or the start of the reply)."""


def cut_last(calls: tuple[TextCall, ...] | list[TextCall]) -> tuple[TextCall, ...]:
    """``calls`` with the one written last marked cut (the markup around them was cut)."""
    last = calls[-1]
    return (*calls[:-1], TextCall(last.name, last.arguments, cut=True))


_BLANKS = re.compile(r"\s*+")


def skip_blanks(text: str, index: int) -> int:
    """The index of the first character at or after ``index`` that is not whitespace."""
    match = _BLANKS.match(text, index)
    return match.end() if match is not None else index


def grows_into(rest: str, literals: Iterable[str]) -> bool:
    """Whether ``rest`` (the end of the text so far) is a proper prefix of one of ``literals``:
    more text may still make it one of them."""
    return any(len(rest) < len(literal) and literal.startswith(rest) for literal in literals)


def expect(text: str, index: int, literal: str, final: bool) -> bool | _NeedMore:
    """Whether ``literal`` stands at ``index``; :data:`NEED_MORE` when the text may still grow
    into it (it ends with a prefix of ``literal``)."""
    if text.startswith(literal, index):
        return True
    rest = text[index:]
    if not final and len(rest) < len(literal) and literal.startswith(rest):
        return NEED_MORE
    return False
