"""The parsing layers of one judgement, outermost first, each re-entering the ones below it.

::

    strict decode ─► empty / null / JSON string holding the arguments (double_encoded) / other
      JSON (wrong_type) ─► template markers at the edges ─► code fence around everything
      ─► one object at the first bracket, read directly, with only prose around it (the common
         case: no scan) ─► otherwise the scan decides (``_scanned``): truncated, ambiguous,
         not_json, or one object in prose ─► relaxed reader (wrapping braces, token repairs,
         Python literal)

How layers compose (``docs/repairs.md``): each of ``template_markers``, ``fence`` and
``double_encoded`` applies at most once on a path, so that every repair kind is reported once
and the depth of re-entry is bounded (a text of ten thousand nested fences costs no more than
one). The content of a double-encoded string goes through every layer again, except
``double_encoded`` itself and the layers already used, and must yield one object: empty,
``null``, any other value, or no object inside the string is ``wrong_type``.

Every layer costs time linear in its text and the re-entry depth is at most four, so a
judgement is linear in the raw text.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from ..core.verdict import RepairKind
from ._outcome import (
    JSON_END,
    JSON_START,
    NOT_AN_OBJECT_STRING,
    STRICT_FAILED,
    STRICT_TRUNCATED,
    STRICT_UNTRIED,
    Accepted,
    Refused,
    Result,
    json_kind,
    one_object,
    strict_outcome,
    strict_prefix,
)
from ._policy import Policy
from ._reader import Read, ReadError, read_group
from ._scan import Scan, scan
from ._scanned import ScannedText, truncated
from ._text_repairs import strip_fence, strip_template_markers

__all__ = ["Layers"]

_decode = msgspec.json.decode
_STRICT_FAILURES = (msgspec.MsgspecError, RecursionError, UnicodeEncodeError)

# The layers that apply at most once on a path (bit flags).
_MARKERS, _FENCE, _DOUBLE = 1, 2, 4

# Text outside any bracket (prose): everything up to the first opening bracket.
_PROSE = re.compile(r"[^{\[]*+")


class Layers:
    """One judgement: the raw text and the policy, shared by the layers."""

    __slots__ = ("policy", "raw")

    def __init__(self, raw: str, policy: Policy) -> None:
        self.raw = raw
        self.policy = policy

    def decoded(self, value: Any, base: int | None, used: int) -> Result:
        """Classify a strictly decoded JSON value."""
        if type(value) is dict:
            return Accepted(value, [])
        policy = self.policy
        if used & _DOUBLE:  # inside a double-encoded string only an object is accepted
            return Refused("wrong_type", NOT_AN_OBJECT_STRING, None)
        if value is None:
            if policy.null_as_empty:
                return Accepted({}, ["null_as_empty"])
            return Refused("wrong_type", "the arguments are null, not an object", base)
        if type(value) is str and policy.double_encoded:
            result = self.text(value, None, used | _DOUBLE, STRICT_UNTRIED)
            if type(result) is Accepted:
                result.repairs.insert(0, "double_encoded")
                return result
            assert type(result) is Refused
            # Not one object: the string's own problem is reported only when it was meant as
            # an object (it starts with one); any other string is just not arguments.
            if result.reason == "wrong_type" or not value.lstrip().startswith("{"):
                return Refused("wrong_type", NOT_AN_OBJECT_STRING, base)
            if result.reason == "truncated":
                return result
            return Refused(result.reason, f"inside the JSON string: {result.detail}", base)
        return Refused("wrong_type", f"the arguments are {json_kind(value)}", base)

    def text(
        self,
        text: str,
        base: int | None,
        used: int,
        strict: int,
        direct: Read | ReadError | None = None,
    ) -> Result:
        """Judge ``text``: a slice of the raw text at ``base``, or a decoded string if None.

        ``strict`` is what the strict decoding of ``text`` said, if the caller tried it;
        ``direct`` the read of the object at its start (``text`` then needs no stripping).
        """
        stripped = text.strip()
        if not stripped:
            if used & _DOUBLE:
                return Refused("wrong_type", NOT_AN_OBJECT_STRING, None)
            if self.policy.empty:
                return Accepted({}, ["empty"])
            return Refused("not_json", "the arguments are empty", base)
        if base is not None and stripped is not text:
            base += len(text) - len(text.lstrip())
        first = stripped[0]
        last = stripped[-1]
        if strict == STRICT_UNTRIED and first in JSON_START and last in JSON_END:
            try:
                value = _decode(stripped)
            except _STRICT_FAILURES as error:
                strict = strict_outcome(error)
            else:
                return self.decoded(value, base, used)
        if first == "{" and last == "}":  # no marker, no fence: the common shape
            return self.body(stripped, base, used, strict, direct)
        policy = self.policy
        if (first in "<[" or last in ">]") and policy.template_markers and not used & _MARKERS:
            cut = strip_template_markers(stripped)
            if cut is not None:
                return self.inner(stripped, base, cut, used | _MARKERS, "template_markers")
        if first == "`" and policy.fence and not used & _FENCE:
            cut = strip_fence(stripped)
            if cut is not None:
                return self.inner(stripped, base, cut, used | _FENCE, "fence")
        return self.body(stripped, base, used, strict)

    def inner(
        self, text: str, base: int | None, cut: tuple[int, int], used: int, kind: RepairKind
    ) -> Result:
        """Judge what is left once an edge repair (``kind``) cut ``text`` to ``cut``.

        The common case first: what is left is a strict JSON object (one decode, no layer).
        """
        start, end = cut
        inner = text[start:end]
        strict = STRICT_UNTRIED
        if start < end and text[start] == "{" and text[end - 1] == "}":
            try:
                value = _decode(inner)
            except _STRICT_FAILURES as error:
                strict = strict_outcome(error)
            else:  # a JSON text in braces is an object
                return Accepted(value, [kind])
        result = self.text(inner, None if base is None else base + start, used, strict)
        if type(result) is Accepted:
            result.repairs.insert(0, kind)
        return result

    def body(
        self,
        text: str,
        base: int | None,
        used: int,
        strict: int,
        direct: Read | ReadError | None = None,
    ) -> Result:
        """Find the object in ``text`` (stripped, not empty).

        The common case first: one object, maybe in prose. The object at the first opening
        bracket is read directly; when it reads and no bracket follows it, that is the whole
        answer and no scan is needed, unless the text from it may be a prefix of strict JSON
        (then it may be cut inside a string: see ``ScannedText.completes``). Otherwise the
        scan decides.
        """
        length = len(text)
        found: Scan | None = None
        lead = text[0]
        if lead == "{":
            first = 0
        elif lead == '"':  # maybe a JSON string never closed: the scan decides
            first = length
        else:
            first = _PROSE.match(text).end()  # type: ignore[union-attr]
        if first == 0 and strict == STRICT_UNTRIED:  # not decoded: it cannot end as JSON
            strict = STRICT_TRUNCATED if strict_prefix(text, 0) else STRICT_FAILED
        if first == 0 and strict == STRICT_TRUNCATED:
            # A prefix of strict JSON is cut off wherever the scan says it ends; no read can
            # make it whole.
            found = scan(text)
            if found.unterminated is not None:
                return truncated(found, base, length)
        elif first < length and text[first] == "{":
            if direct is None or first:
                direct = read_group(text, first, length, self.policy)
            if type(direct) is Read:
                end = direct.end
                if end == length and first == 0:
                    return Accepted(direct.value, direct.repairs)
                if _PROSE.match(text, end).end() == length and (  # type: ignore[union-attr]
                    first == 0 or not _may_be_strict_prefix(text, first, direct)
                ):
                    return one_object(text, base, first, direct, self.policy.prose)
        reads: dict[int, Read | ReadError] = {} if direct is None else {first: direct}
        nested = bool(used & _DOUBLE)
        return ScannedText(self.raw, self.policy, text, base, nested, strict, reads).judge(found)


def _may_be_strict_prefix(text: str, start: int, read: Read) -> bool:
    """True when ``text[start:]``, which ``read`` read as an object, is a prefix of strict JSON.

    Only a key closed by the wrong quote (``"parameters':``, reported as
    ``single_quoted_keys``) lets the reader close what strict JSON reads as a string still
    open; every other repair makes strict decoding fail at it. So the strict decoding is
    tried only after that repair.
    """
    return "single_quoted_keys" in read.repairs and strict_prefix(text, start)
