"""``parse_arguments``: the judge's pure core, from one raw arguments text to one ``Verdict``.

The layers, outermost first (repairs are reported in this order)::

    size limit ─► known tool ─► strict msgspec decode (the fast path: valid objects stop here)
      ─► empty / null / JSON string holding an object (double_encoded) / other JSON (wrong_type)
      ─► lone-surrogate check ─► structural scan: text ending inside a value is ``truncated``
      ─► template markers at the edges ─► code fence around everything (each re-enters the layers)
      ─► top-level objects in the text: none (not_json), two or more (ambiguous), exactly one
         (surrounding text is ``prose``) ─► wrapping braces ─► relaxed reader (token repairs)
         or the Python-literal reader
      ─► schema (with ``envelope`` unwrapping) ─► verdict and message

Nothing here raises on model output: every input (any size, any characters, any nesting) gives a
verdict. Exceptions are only for bad use of the library (an invalid schema).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import msgspec
import pydantic

from ..pipeline.verdict import RejectReason, RepairKind, Verdict
from ._message import render_message
from ._policy import DEFAULT_POLICY, Policy
from ._reader import Read, ReadError, read_object
from ._scan import Scan, scan
from ._schema import SchemaChecker, checker_for
from ._text_repairs import strip_fence, strip_template_markers, unwrap_braces

__all__ = ["ENVELOPE_KEYS", "ToolSchema", "parse_arguments"]

#: The wrapper keys the ``envelope`` repair removes: ``{"arguments": {...}}`` and friends.
ENVELOPE_KEYS = ("arguments", "parameters", "input")

#: What ``schema=`` accepts: a JSON Schema dict, a pydantic model class, or a compiled checker
#: (a ``ToolSpec`` from a ``Toolset`` passes its ``checker``).
ToolSchema = Mapping[str, Any] | type[pydantic.BaseModel] | SchemaChecker

_decode = msgspec.json.decode
_STRICT_FAILURES = (msgspec.MsgspecError, RecursionError, UnicodeEncodeError)
_LONE_SURROGATE = re.compile(r"[\ud800-\udfff]")
_NOT_DECODED = object()
_NOT_TRIED = object()


@dataclass(slots=True)
class _Accepted:
    arguments: dict[str, Any]
    repairs: list[RepairKind]


@dataclass(slots=True)
class _Refused:
    reason: RejectReason
    detail: str
    position: int | None


_Result = _Accepted | _Refused


def _with(kind: RepairKind, result: _Result) -> _Result:
    """Put ``kind`` in front of the repairs of an accepted result."""
    if isinstance(result, _Accepted):
        result.repairs.insert(0, kind)
    return result


def _line_column(raw: str, position: int) -> str:
    line = raw.count("\n", 0, position) + 1
    column = position - (raw.rfind("\n", 0, position) + 1) + 1
    return f"line {line}, column {column}"


def _json_kind(value: object) -> str:
    if isinstance(value, list):
        return "a JSON array"
    if isinstance(value, bool):
        return f"the JSON boolean {'true' if value else 'false'}"
    if isinstance(value, int | float):
        return "a JSON number"
    if isinstance(value, str):
        return "a JSON string that does not hold an object"
    return "null"


class _Judge:
    """One judgement: the raw text and the policy, shared by the layers."""

    __slots__ = ("policy", "raw")

    def __init__(self, raw: str, policy: Policy) -> None:
        self.raw = raw
        self.policy = policy

    def refused_at(self, error: ReadError, base: int | None) -> _Refused:
        """A ``not_json`` refusal located in the raw text (when the text is a slice of it)."""
        if base is None:
            return _Refused("not_json", f"inside the JSON string: {error.message}", None)
        position = base + error.position
        where = _line_column(self.raw, position)
        return _Refused("not_json", f"{error.message} at {where}", position)

    def decoded(self, value: Any, base: int | None, nested: bool) -> _Result:
        """Classify a strictly decoded JSON value."""
        if type(value) is dict:
            return _Accepted(value, [])
        policy = self.policy
        if value is None:
            if policy.null_as_empty:
                return _Accepted({}, ["null_as_empty"])
            return _Refused("wrong_type", "the arguments are null, not an object", base)
        if isinstance(value, str) and policy.double_encoded and not nested:
            inner = value.strip()
            if inner.startswith("{"):
                result = self.text(value, None, nested=True)
                if isinstance(result, _Refused) and result.reason != "truncated":
                    return _Refused(result.reason, f"inside the JSON string: {result.detail}", base)
                return _with("double_encoded", result)
        return _Refused("wrong_type", f"the arguments are {_json_kind(value)}", base)

    def text(self, text: str, base: int | None, *, nested: bool, decoded: bool = False) -> _Result:
        """Judge ``text`` (a slice of the raw text at ``base``, or a decoded string if None)."""
        policy = self.policy
        stripped = text.strip()
        if base is not None:
            base += len(text) - len(text.lstrip())
        if not stripped:
            if policy.empty:
                return _Accepted({}, ["empty"])
            return _Refused("not_json", "the arguments are empty", base)
        if not decoded:
            try:
                value = _decode(stripped)
            except _STRICT_FAILURES:
                pass
            else:
                return self.decoded(value, base, nested)
        if policy.template_markers:
            cut = strip_template_markers(stripped)
            if cut is not None:
                inner_base = None if base is None else base + cut[0]
                inner = stripped[cut[0] : cut[1]]
                return _with("template_markers", self.text(inner, inner_base, nested=nested))
        if policy.fence:
            cut = strip_fence(stripped)
            if cut is not None:
                inner_base = None if base is None else base + cut[0]
                inner = stripped[cut[0] : cut[1]]
                return _with("fence", self.text(inner, inner_base, nested=nested))
        found = scan(stripped)
        if found.unterminated is not None and not self.completes(stripped, found):
            end = None if base is None else base + len(stripped)
            what = "an" if found.unterminated in ("object", "array") else "a"
            detail = f"the arguments end inside {what} {found.unterminated}"
            return _Refused("truncated", detail, end)
        return self.objects(stripped, base, found)

    def completes(self, text: str, found: Scan) -> bool:
        """True when an object the scan thinks is still open is in fact complete.

        The scan reads a key such as ``"parameters':`` (closed by the wrong quote) as a string
        that never ends. The text is complete only if it is *not* a prefix of strict JSON (the
        strict parser fails before the end; otherwise the text really may be cut inside a
        string) and the relaxed reader reads the open group as one object up to the end.
        On success the group is added to ``found.groups``.
        """
        start = found.open_start
        if start is None or text[start] != "{":
            return False
        try:
            _decode(text[start:])
        except msgspec.DecodeError as error:
            if str(error) == "Input data was truncated":
                return False
        except _STRICT_FAILURES:
            return False
        try:
            self.group(text, start, len(text))
        except ReadError:
            return False
        found.groups.append((start, len(text)))
        found.unterminated = None
        return True

    def group(self, text: str, start: int, end: int) -> Read:
        """Read the object ``text[start:end]``, unwrapping braces, then JSON, then Python."""
        policy = self.policy
        prefix: list[RepairKind] = []
        if policy.wrapping_braces and text.startswith("{", start):
            after = start + 1
            while after < end and text[after].isspace():
                after += 1
            if text.startswith("{", after):
                unwrapped = unwrap_braces(text[start:end])
                if unwrapped is not None:
                    start, end = start + unwrapped[0], start + unwrapped[1]
                    prefix.append("wrapping_braces")
        try:
            read = read_object(text, start, policy)
        except ReadError as error:
            if not policy.python_literal:
                raise
            try:
                read = read_object(text, start, policy, python=True)
            except ReadError:
                raise error from None
        if read.end != end:
            raise ReadError("unexpected text after the object", read.end)
        read.repairs[:0] = prefix
        return read

    def objects(self, text: str, base: int | None, found: Scan) -> _Result:
        """Decide from the top-level groups: one object (maybe in prose), none, or several."""
        if found.broken is not None:
            try:
                self.group(text, found.broken, len(text))
            except ReadError as error:
                return self.refused_at(error, base)
            return _Refused("not_json", "the brackets do not match", base)
        objects = [(a, b) for a, b in found.groups if text[a] == "{"]
        if not objects:
            if found.groups == [(0, len(text))]:
                return _Refused("wrong_type", "the arguments are an array, not an object", base)
            return _Refused("not_json", "no JSON object found in the arguments", base)
        accepted: list[tuple[int, int, Read]] = []
        failed: list[tuple[int, ReadError]] = []
        for start, end in objects:
            try:
                accepted.append((start, end, self.group(text, start, end)))
            except ReadError as error:
                # A group with a colon or a quote was meant as an object; ``{x}`` in prose was not.
                if any(c in text[start:end] for c in ':"'):
                    failed.append((start, error))
        if len(accepted) > 1:
            starts = ", ".join(str(a if base is None else base + a) for a, _, _ in accepted)
            second = accepted[1][0] if base is None else base + accepted[1][0]
            detail = f"found {len(accepted)} objects, at characters {starts}"
            return _Refused("ambiguous", detail, second)
        if failed or not accepted:
            if failed:
                return self.refused_at(failed[0][1], base)
            return _Refused("not_json", "no JSON object found in the arguments", base)
        start, end, read = accepted[0]
        repairs = read.repairs
        if start != 0 or end != len(text):
            if not self.policy.prose:
                where = end if start == 0 else 0
                position = None if base is None else base + where
                return _Refused("not_json", "text around the JSON object", position)
            repairs.insert(0, "prose")
        return _Accepted(read.value, repairs)


def _utf8_length_exceeds(raw: str, limit: int) -> bool:
    """True when the UTF-8 encoding of ``raw`` is longer than ``limit`` bytes.

    A character takes one to four bytes, so the exact (encoding) count is needed only when
    the character count is between ``limit / 4`` and ``limit``.
    """
    length = len(raw)
    if length * 4 <= limit:
        return False
    if length > limit:
        return True
    return len(raw.encode("utf-8", "surrogatepass")) > limit


def parse_arguments(
    raw: str,
    *,
    tool: str,
    schema: ToolSchema | None = None,
    policy: Policy = DEFAULT_POLICY,
    truncated: bool | None = None,
    known_tools: Collection[str] | Mapping[str, Any] | None = None,
    arguments_form: Literal["string", "object"] = "string",
    call_id: str | None = None,
) -> Verdict:
    """Judge one tool call's raw arguments text: ok, repaired (with the repairs), or rejected.

    Never raises on model output. A strict JSON object is returned unchanged (``ok``) at the
    cost of one ``msgspec`` decode when no schema is given. ``truncated`` is the stream's
    evidence that the call was cut at the output-token limit: text that does not parse is then
    rejected as ``truncated``; text that parses passes with ``Verdict.truncated`` set. Text
    that ends inside a string, object or array is rejected as ``truncated`` whatever the flag.
    ``arguments_form="object"`` means the provider sent an object that was serialized to
    ``raw``; it is reported as the ``object_form`` repair. Raises ``ConfigurationError`` only
    for an invalid ``schema``.
    """
    length = len(raw)
    flagged = truncated is True
    value: Any = _NOT_TRIED
    if length * 4 <= policy.max_bytes:
        # The fast path: one C call and one struct for the common case.
        try:
            value = _decode(raw)
        except _STRICT_FAILURES:
            value = _NOT_DECODED
        else:
            if (
                type(value) is dict
                and schema is None
                and known_tools is None
                and arguments_form == "string"
            ):
                return Verdict(outcome="ok", arguments=value, raw_length=length, truncated=flagged)
    result: _Result
    if _utf8_length_exceeds(raw, policy.max_bytes):
        detail = (
            f"the arguments are over {policy.max_bytes} bytes of UTF-8 "
            f"({length} characters); the limit is {policy.max_bytes} bytes"
        )
        result = _Refused("too_large", detail, None)
    elif known_tools is not None and tool not in known_tools:
        names = ", ".join(sorted(known_tools)) or "none"
        result = _Refused("unknown_tool", f"available tools: {names}", None)
    else:
        result = _judge(raw, policy, arguments_form, value)
        if isinstance(result, _Accepted) and schema is not None:
            result = _check_schema(result, schema, policy)
    return _verdict(result, raw, tool=tool, flagged=flagged, call_id=call_id)


def _judge(raw: str, policy: Policy, arguments_form: str, value: Any) -> _Result:
    """Run the parsing layers over ``raw`` (``value``: its strict decoding, if already tried)."""
    judge = _Judge(raw, policy)
    if value is _NOT_TRIED:
        try:
            value = _decode(raw)
        except _STRICT_FAILURES:
            value = _NOT_DECODED
    if arguments_form == "object":
        if not policy.object_form:
            return _Refused(
                "wrong_type", "the arguments arrived as an object, not as a JSON string", None
            )
        if type(value) is dict:
            return _Accepted(value, ["object_form"])
        result = judge.decoded(value, 0, False) if value is not _NOT_DECODED else None
        return _with("object_form", result or judge.text(raw, 0, nested=False, decoded=True))
    if value is not _NOT_DECODED:
        return judge.decoded(value, 0, False)
    surrogate = _LONE_SURROGATE.search(raw)
    if surrogate is not None:
        position = surrogate.start()
        detail = (
            f"the text holds a lone surrogate (U+{ord(surrogate.group()):04X}) at "
            f"{_line_column(raw, position)}, which is not valid Unicode"
        )
        return _Refused("not_json", detail, position)
    return judge.text(raw, 0, nested=False, decoded=True)


def _check_schema(result: _Accepted, schema: ToolSchema, policy: Policy) -> _Result:
    """Validate accepted arguments; unwrap an ``envelope`` only when that alone makes them valid."""
    checker = schema if isinstance(schema, SchemaChecker) else checker_for(schema)
    problems = checker.problems(result.arguments)
    if not problems:
        return result
    arguments = result.arguments
    if policy.envelope and len(arguments) == 1:
        ((key, inner),) = arguments.items()
        if (
            key in ENVELOPE_KEYS
            and type(inner) is dict
            and not checker.declares(key)
            and not checker.problems(inner)
        ):
            return _Accepted(inner, [*result.repairs, "envelope"])
    return _Refused("schema", "\n".join(problems), None)


def _verdict(
    result: _Result, raw: str, *, tool: str, flagged: bool, call_id: str | None
) -> Verdict:
    """Turn a layer result into the public verdict (with its message when rejected)."""
    length = len(raw)
    if isinstance(result, _Accepted):
        return Verdict(
            outcome="repaired" if result.repairs else "ok",
            arguments=result.arguments,
            repairs=tuple(result.repairs),
            raw_length=length,
            truncated=flagged,
        )
    reason = result.reason
    detail = result.detail
    if flagged and reason == "not_json":
        reason = "truncated"
        detail = f"the stream stopped at the output-token limit; the text does not parse: {detail}"
    verdict = Verdict(
        outcome="rejected",
        arguments=None,
        reason=reason,
        detail=detail,
        position=result.position,
        raw_length=length,
        truncated=flagged or reason == "truncated",
    )
    message = render_message(verdict, tool=tool, raw=raw, call_id=call_id)
    return msgspec.structs.replace(verdict, message=message)
