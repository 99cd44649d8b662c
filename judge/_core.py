"""``parse_arguments``: the judge's pure core, from one raw arguments text to one ``Verdict``.

The order, outermost first (repairs are reported in this order)::

    size limit ─► known tool ─► strict msgspec decode (the fast path: valid objects stop here)
      ─► lone-surrogate check ─► the parsing layers (``_layers``: double_encoded, template
         markers, fence, the direct read or the scan, truncation, prose, the relaxed reader)
      ─► schema (with ``envelope`` unwrapping) ─► verdict and message

Nothing here raises on model output: every input (any size, any characters, any nesting) gives a
verdict, in time linear in its length. Exceptions are only for bad use of the library (an
invalid schema, raised as ``ConfigurationError`` when the schema is compiled).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from typing import Any, Literal

import msgspec
import pydantic

from ..core.errors import ConfigurationError
from ..core.json_text import plain_str
from ..core.verdict import Verdict
from ._layers import Layers
from ._message import render_message
from ._outcome import (
    JSON_END,
    JSON_START,
    STRICT_FAILED,
    STRICT_TRUNCATED,
    STRICT_UNTRIED,
    TRUNCATED_MESSAGE,
    Accepted,
    Refused,
    Result,
    line_column,
)
from ._policy import DEFAULT_POLICY, Policy
from ._reader import Read, ReadError, read_group
from ._schema import SchemaChecker, checker_for

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
# Stand for the strict decoding's error when the text was not decoded because it cannot be
# JSON: it is not even a prefix of JSON, or it may be one (strict decoding would say so).
_NOT_JSON = msgspec.DecodeError("the text is not JSON")
_MAYBE_CUT = msgspec.DecodeError("the text is not JSON, or is cut short")
# What may follow the ``{`` that starts a JSON object.
_AFTER_BRACE = frozenset('"} \t\r\n')


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
    ``raw``: that is the provider's form, not a repair, so it changes nothing here (issue 18:
    every Gemini and Ollama call was ``repaired``); the call keeps it as its
    ``arguments_form``. Raises ``ConfigurationError`` for an unusable ``schema`` (compiled
    once per schema object, on the first call that passes it), whatever the text, and for a
    ``raw`` that is not text.
    """
    if type(raw) is not str:
        if not isinstance(raw, str):
            raise ConfigurationError(
                f"raw must be the arguments' text (str), not {type(raw).__name__}: pass an "
                "arguments object as its JSON text, with arguments_form='object'"
            )
        raw = plain_str(raw)
    length = len(raw)
    flagged = truncated is True
    simple = schema is None and known_tools is None
    value: Any = _NOT_TRIED
    error: Exception | None = None
    if length * 4 <= policy.max_bytes:
        # The fast path: one C call and one struct for the common case. A text that cannot be
        # JSON (its first or last character cannot start or end JSON: a fence, a marker, prose,
        # nothing; or an object whose second character cannot follow ``{``, or that ends with
        # a comma and a closer) is not decoded: that would only fail, at some cost.
        if not length or raw[0] not in JSON_START or (
            raw[0] == "{" and length > 1 and raw[1] not in _AFTER_BRACE
        ):
            error = _NOT_JSON  # not even a prefix of JSON
        elif raw[-1] not in JSON_END or (raw[-2:] in (",}", ",]")):
            error = _MAYBE_CUT  # maybe a prefix of JSON (cut inside a string)
        else:
            try:
                value = _decode(raw)
            except _STRICT_FAILURES as failure:
                error = failure.with_traceback(None)  # no cycle through this frame
            else:
                if simple and type(value) is dict:
                    return Verdict(
                        outcome="ok", arguments=value, raw_length=length, truncated=flagged
                    )
        if error is not None:
            value = _NOT_DECODED
            if simple:  # the common malformed call: nothing to check but the text
                return _judge_malformed(raw, policy, error, tool, flagged, call_id)
    checker: SchemaChecker | None = None
    if schema is not None:
        checker = schema if isinstance(schema, SchemaChecker) else checker_for(schema, tool=tool)
    result: Result
    if length * 4 > policy.max_bytes and _utf8_length_exceeds(raw, policy.max_bytes):
        detail = (
            f"the arguments are over {policy.max_bytes} bytes of UTF-8 "
            f"({length} characters); the limit is {policy.max_bytes} bytes"
        )
        result = Refused("too_large", detail, None)
    elif known_tools is not None and tool not in known_tools:
        names = ", ".join(sorted(known_tools)) or "none"
        result = Refused("unknown_tool", f"available tools: {names}", None)
    else:
        if value is _NOT_TRIED:
            try:
                value = _decode(raw)
            except _STRICT_FAILURES as failure:
                value = _NOT_DECODED
                error = failure.with_traceback(None)  # no cycle through this frame
        if error is not None:
            result = _judge_text(raw, policy, error)
        else:
            result = Layers(raw, policy).decoded(value, 0, 0)
        if checker is not None and type(result) is Accepted:
            result = _check_schema(result, checker, policy)
    return _verdict(result, raw, tool, flagged, call_id)


def _judge_malformed(
    raw: str, policy: Policy, error: Exception, tool: str, flagged: bool, call_id: str | None
) -> Verdict:
    """The verdict on text that strict decoding rejected (or skipped), with nothing else to check.

    Its two most common shapes are judged here without the layers: no text (``empty``), and
    one object spanning the text that the reader reads to its end (token repairs). Such a
    read is the whole answer unless the text may be a prefix of strict JSON, which only a key
    closed by the wrong quote allows (see ``_layers``): then the layers decide.
    """
    length = len(raw)
    if policy.empty and (not length or raw.isspace()):
        return Verdict(
            outcome="repaired", arguments={}, repairs=("empty",), raw_length=length,
            truncated=flagged,
        )  # fmt: skip
    direct: Read | ReadError | None = None
    if length and raw[0] == "{" and raw[-1] == "}":
        if error is _NOT_JSON or error is _MAYBE_CUT:
            readable = raw.isascii() or _LONE_SURROGATE.search(raw) is None  # else: refused
        else:
            readable = type(error) is msgspec.DecodeError and str(error) != TRUNCATED_MESSAGE
        if readable:
            direct = read_group(raw, 0, length, policy)
            if (
                type(direct) is Read
                and direct.end == length
                and not (error is _MAYBE_CUT and "single_quoted_keys" in direct.repairs)
            ):
                repairs = direct.repairs
                return Verdict(
                    outcome="repaired" if repairs else "ok",
                    arguments=direct.value,
                    repairs=tuple(repairs),
                    raw_length=length,
                    truncated=flagged,
                )
    return _verdict(_judge_text(raw, policy, error, direct), raw, tool, flagged, call_id)


def _judge_text(
    raw: str, policy: Policy, error: Exception, direct: Read | ReadError | None = None
) -> Result:
    """Run the parsing layers over ``raw``, which strict decoding rejected with ``error``.

    ``direct`` is the read of the object at the start of ``raw``, when the caller tried it.
    """
    kind = type(error)
    # msgspec encodes to UTF-8 first, so a lone surrogate is a UnicodeEncodeError; a text that
    # was not decoded at all is searched.
    if (kind is UnicodeEncodeError or error is _NOT_JSON or error is _MAYBE_CUT) and not (
        raw.isascii()  # O(1): no surrogate in an ASCII text
    ):
        surrogate = _LONE_SURROGATE.search(raw)
        if surrogate is not None:
            position = surrogate.start()
            detail = (
                f"the text holds a lone surrogate (U+{ord(surrogate.group()):04X}) at "
                f"{line_column(raw, position)}, which is not valid Unicode"
            )
            return Refused("not_json", detail, position)
    strict = STRICT_FAILED
    if error is _MAYBE_CUT:
        strict = STRICT_UNTRIED
    elif kind is msgspec.DecodeError and str(error) == TRUNCATED_MESSAGE:
        strict = STRICT_TRUNCATED
    return Layers(raw, policy).text(raw, 0, 0, strict, direct)


def _check_schema(result: Accepted, checker: SchemaChecker, policy: Policy) -> Result:
    """Validate accepted arguments; unwrap an ``envelope`` only when that alone makes them valid."""
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
            return Accepted(inner, [*result.repairs, "envelope"])
    return Refused("schema", "\n".join(problems), None)


def _verdict(result: Result, raw: str, tool: str, flagged: bool, call_id: str | None) -> Verdict:
    """Turn a layer result into the public verdict (with its message when rejected)."""
    length = len(raw)
    if type(result) is Accepted:
        repairs = result.repairs
        return Verdict(
            outcome="repaired" if repairs else "ok",
            arguments=result.arguments,
            repairs=tuple(repairs),
            raw_length=length,
            truncated=flagged,
        )
    assert type(result) is Refused
    reason = result.reason
    detail = result.detail
    if flagged and reason == "not_json":
        reason = "truncated"
        detail = f"the stream shows the call was cut off; the text does not parse: {detail}"
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
