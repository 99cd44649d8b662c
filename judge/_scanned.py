"""The layers that need the structural scan: truncation, several groups, broken brackets.

The common text (one object, maybe in prose) never gets here: ``_layers`` reads it directly.
What does get here is decided from the scan of the whole text (``_scan``), in this order:

- the text ends inside a value: ``truncated`` (unless the open value is an object whose key
  was closed by the wrong quote, which the scan takes for a string: see ``completes``; or
  the scan is fooled by a quote missing earlier and the object does not read for a mistake
  before the end: ``not_json`` there, see ``misquoted``);
- a top-level group whose brackets do not match: ``not_json``;
- the groups in text order, read until the verdict is decided: the second object that reads
  makes it ``ambiguous``, the first group meant as an object that does not read makes it
  ``not_json``; one object is accepted (with ``prose`` around it), none is ``not_json``.

Each group is read at most once, and reading stops as soon as the verdict is known, so the
cost is one scan plus reads of disjoint groups: linear in the text.
"""

from __future__ import annotations

import re

from ._outcome import (
    NOT_AN_OBJECT_STRING,
    STRICT_TRUNCATED,
    STRICT_UNTRIED,
    Refused,
    Result,
    no_object,
    one_object,
    refused_at,
    strict_prefix,
)
from ._policy import Policy
from ._reader import Read, ReadError, read_group
from ._scan import Scan, scan

__all__ = ["ScannedText", "truncated"]

# Text with no colon and no double quote: a group that is all such text was not meant as an
# object (``{x}`` in prose).
_NO_COLON_OR_QUOTE = re.compile(r'[^:"]*+')
# An object with no key, maybe wrapped: the only object a group without a colon can be.
_EMPTY_OBJECT = re.compile(r"\{[ \t\r\n{}]*\}")


def truncated(found: Scan, base: int | None, length: int) -> Refused:
    """The text ends inside the value the scan names."""
    what = "an" if found.unterminated in ("object", "array") else "a"
    detail = f"the arguments end inside {what} {found.unterminated}"
    return Refused("truncated", detail, None if base is None else base + length)


class ScannedText:
    """One text judged with its scan (``raw`` and ``base`` locate refusals in the raw text)."""

    __slots__ = ("base", "nested", "policy", "raw", "reads", "strict", "text")

    def __init__(
        self,
        raw: str,
        policy: Policy,
        text: str,
        base: int | None,
        nested: bool,
        strict: int,
        reads: dict[int, Read | ReadError],
    ) -> None:
        self.raw = raw
        self.policy = policy
        self.text = text
        self.base = base
        self.nested = nested
        self.strict = strict
        # Each group is read once, whichever layer asks first (start -> read or error).
        self.reads = reads

    def judge(self, found: Scan | None) -> Result:
        """Decide with the scan (``found``, when the caller already has it)."""
        text = self.text
        if found is None:
            found = scan(text)
        if found.unterminated is not None and not self.completes(found):
            misquoted = self.misquoted(found)
            if misquoted is not None:
                return refused_at(self.raw, misquoted, self.base)
            return truncated(found, self.base, len(text))
        return self.objects(found)

    def misquoted(self, found: Scan) -> ReadError | None:
        """Why an object the scan thinks ends inside a string does not read, when that, not a
        cut, is what is known.

        The scan pairs quotes in order, so one quote missing earlier (``, description": "x"}``)
        leaves the last one alone, and the text looks cut inside a string. When strict JSON
        fails before the end and the reader, with every repair allowed, stops at a mistake
        before the end too, nothing shows the text was cut: the mistake is what is known, and
        it is what the model is told (``docs/repairs.md``, rule 6). A reader that runs out of
        text inside a value (``{'a': "cut``) still makes it ``truncated``.
        """
        start = found.open_start
        if (
            found.unterminated != "string"
            or start is None
            or self.text[start] != "{"
            or self.strict_prefix(start)
        ):
            return None
        read = self.read(start, len(self.text))
        if isinstance(read, Read) or read.at_end or read.refused:
            return None
        return read

    def read(self, start: int, end: int) -> Read | ReadError:
        """The object at ``start`` (not past ``end``), read once."""
        known = self.reads.get(start)
        if known is None:
            known = self.reads[start] = read_group(self.text, start, end, self.policy)
        return known

    def group(self, start: int, end: int) -> Read | ReadError:
        """The object that is exactly ``text[start:end]``, or why there is none."""
        read = self.read(start, end)
        if type(read) is Read and read.end != end:
            return ReadError("unexpected text after the object", read.end)
        return read

    def completes(self, found: Scan) -> bool:
        """True when an object the scan thinks is still open is in fact complete.

        The scan reads a key such as ``"parameters':`` (closed by the wrong quote) as a string
        that never ends. The text is complete only if it is *not* a prefix of strict JSON (the
        strict parser fails before the end; otherwise the text really may be cut inside a
        string) and the relaxed reader reads the open group as one object. Text after that
        object is scanned on (it may be prose, or hold another object); on success the groups
        are added to ``found``. After two such objects the verdict is ``ambiguous`` whatever
        follows, so the rest is not looked at.
        """
        text = self.text
        completed = 0
        while found.unterminated is not None:
            start = found.open_start
            if start is None or text[start] != "{" or self.strict_prefix(start):
                return False
            read = self.read(start, len(text))
            if type(read) is not Read:
                return False
            found.groups.append((start, read.end))
            completed += 1
            rest = scan(text, read.end) if completed < 2 else Scan()
            found.groups.extend(rest.groups)
            found.unterminated = rest.unterminated
            found.open_start = rest.open_start
            found.broken = rest.broken
        return True

    def strict_prefix(self, start: int) -> bool:
        """True when the text from ``start`` is a prefix of strict JSON."""
        if start == 0 and self.strict != STRICT_UNTRIED:
            return self.strict == STRICT_TRUNCATED
        return strict_prefix(self.text, start)

    def objects(self, found: Scan) -> Result:
        """Decide from the top-level groups: one object (maybe in prose), none, or several."""
        text = self.text
        base = self.base
        if found.broken is not None:
            broken = self.group(found.broken, len(text))
            if type(broken) is ReadError:
                return refused_at(self.raw, broken, base)
            return Refused("not_json", "the brackets do not match", base)
        objects = [(a, b) for a, b in found.groups if text[a] == "{"]
        if not objects:
            if found.groups == [(0, len(text))]:
                if self.nested:
                    return Refused("wrong_type", NOT_AN_OBJECT_STRING, None)
                return Refused("wrong_type", "the arguments are an array, not an object", base)
            return no_object(base, self.nested)
        # Groups are read in text order until the verdict is decided. A group with a colon or
        # a quote was meant as an object; ``{x}`` in prose was not, and without a colon only
        # an empty object (``{}``, ``{{ }}``) can read, so the others are not even read.
        accepted: list[tuple[int, Read]] = []
        last = len(objects) - 1
        for number, (start, end) in enumerate(objects):
            meant = _NO_COLON_OR_QUOTE.match(text, start, end).end() < end  # type: ignore[union-attr]
            if not meant and _EMPTY_OBJECT.fullmatch(text, start, end) is None:
                continue
            read = self.group(start, end)
            if type(read) is ReadError:
                if meant:
                    return refused_at(self.raw, read, base)
                continue
            assert type(read) is Read
            accepted.append((start, read))
            if len(accepted) == 2:
                where = [a if base is None else base + a for a, _ in accepted]
                starts = ", ".join(map(str, where))
                if number == last:
                    detail = f"found 2 objects, at characters {starts}"
                else:
                    detail = f"found more than one object; the first two at characters {starts}"
                return Refused("ambiguous", detail, where[1])
        if not accepted:
            return no_object(base, self.nested)
        start, read = accepted[0]
        return one_object(text, base, start, read, self.policy.prose)
