"""The constrained re-ask's kit: which rejected call a constraint can fix, and which schemas a
server's structured-output engine keeps to whole.

A re-ask after a rejected call is a free second try: a small model often breaks the call the
same way again, or gives up and answers in words. Every server toolwire names can instead be
asked for a call to one tool whose arguments its own grammar engine keeps to that tool's
schema (``docs/healing.md``, "A constrained re-ask"). What is the same for every format is
here; each format writes its server's own request (``WireFormat.constrained``, in its
``healing.py``) from data:

- :func:`constrained_reask`: the one decision. A constraint is asked for only when the model
  chose a tool and its call was rejected for a reason a constraint prevents
  (:data:`CONSTRAINABLE`: not JSON, not an object, two objects, the schema, markup the server
  could not parse), one call, named; never toward a tool the model did not pick, never after
  prose (no call was rejected), never for a cut call (a constraint does not lengthen a budget:
  the retry's token budget is a separate policy). The user may turn it off
  (:class:`ConstraintOptions`: per request, per tool, per proxy).
- :class:`SchemaEngine` and :func:`unsupported_keyword`: what one engine enforces. A schema
  with a keyword outside it is not constrained (the re-ask goes as before, and says why:
  ``schema_unsupported``), so that a constrained call is valid by construction, not mostly.
- the pieces formats share: finding a tool by name in a list, the call written as a JSON object
  (:func:`call_envelope`, for a server whose grammar constrains text, not a call).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

import msgspec

from ..core.turn import Turn
from ..core.verdict import RejectReason
from ..core.wire import Constraint

__all__ = [
    "CONSTRAINABLE",
    "FORMAT_KEYS",
    "GRAMMAR_CORE",
    "LLAMA_CPP",
    "LLAMA_CPP_PYTHON",
    "NO_PARAMETERS",
    "OPENAI_STRICT",
    "STRUCTURED_OUTPUTS",
    "ConstraintOptions",
    "Forcing",
    "SchemaEngine",
    "call_envelope",
    "constrained_reask",
    "find_tool",
    "forcing_for",
    "function_name",
    "schema_checked",
    "skipped",
    "unsupported_keyword",
]

#: The judge's reasons a constraint prevents: the arguments are not JSON (``not_json``), not an
#: object (``wrong_type``), two objects (``ambiguous``), do not fit the schema (``schema``: a
#: wrong type, a missing required key, an unknown enum value), or the server could not parse
#: the model's markup (``server_could_not_parse``). Not here: ``truncated`` (a cut needs more
#: budget, not a grammar), ``unknown_tool`` (the model chose no tool that exists),
#: ``too_large`` and ``lost_in_transit`` (not the call's form).
CONSTRAINABLE: Final[frozenset[RejectReason]] = frozenset(
    {"not_json", "wrong_type", "ambiguous", "schema", "server_could_not_parse"}
)

#: Keywords that say nothing about which values are valid: every engine may ignore them.
_ANNOTATIONS: Final = frozenset(
    {
        "title",
        "description",
        "default",
        "examples",
        "$schema",
        "$id",
        "$comment",
        "deprecated",
        "readOnly",
        "writeOnly",
    }
)
#: Keywords whose value is one schema, a list of schemas, or a name -> schema map.
_ONE: Final = frozenset({"items", "additionalProperties", "not", "if", "then", "else", "contains"})
_LIST: Final = frozenset({"anyOf", "oneOf", "allOf", "prefixItems"})
_MAP: Final = frozenset({"properties", "$defs", "definitions", "patternProperties"})


class SchemaEngine(msgspec.Struct, frozen=True, kw_only=True):
    """The JSON Schema one server's structured-output engine keeps to whole.

    ``keywords``: the validation keywords it enforces (annotations, :data:`_ANNOTATIONS`, are
    always fine). ``strict_objects``: it takes only closed objects whose every property is
    required (OpenAI's strict mode refuses the request otherwise). ``type_lists``: a ``type``
    list keeps the schema's other keywords (llama-cpp-python's converter makes ``{"type":
    [...]}`` a union of the bare types and drops them).
    """

    name: str
    keywords: frozenset[str]
    strict_objects: bool = False
    type_lists: bool = True


#: The keywords that each grammar engine named below turns into grammar whole, read in its
#: source: llama.cpp's ``common/json-schema.cpp`` (b11434: ``oneOf`` is read as ``anyOf``,
#: ``allOf`` in part, ``pattern`` only when anchored and in the subset it converts, ``format``
#: for four formats, bounds for integers only; ``not``, ``if``, ``multipleOf``,
#: ``uniqueItems``, ``patternProperties``, ``minProperties`` are ignored), llama-cpp-python's
#: ``llama_cpp/llama_grammar.py`` (0.3.36, the same converter's older port), and the core that
#: vLLM's and SGLang's engines (xgrammar, guidance) take. A keyword past these may be taken by
#: one engine, loosely or not at all by another: toolwire constrains only what all of them keep.
GRAMMAR_CORE: Final = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "prefixItems",
        "minItems",
        "maxItems",
        "enum",
        "const",
        "anyOf",
        "$ref",
        "$defs",
        "definitions",
        "minLength",
        "maxLength",
    }
)

LLAMA_CPP: Final = SchemaEngine(name="llama.cpp json-schema-to-grammar", keywords=GRAMMAR_CORE)
LLAMA_CPP_PYTHON: Final = SchemaEngine(
    name="llama-cpp-python LlamaGrammar.from_json_schema", keywords=GRAMMAR_CORE, type_lists=False
)
#: vLLM's and SGLang's structured outputs (xgrammar by default).
STRUCTURED_OUTPUTS: Final = SchemaEngine(name="xgrammar / guidance", keywords=GRAMMAR_CORE)
#: OpenAI's strict function calling (Structured Outputs): the supported subset of its guide
#: "Supported schemas", every object closed and every property required.
OPENAI_STRICT: Final = SchemaEngine(
    name="OpenAI strict",
    keywords=GRAMMAR_CORE
    | {"pattern", "format", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}
    | {"multipleOf"},
    strict_objects=True,
)

#: How deep a schema is walked; deeper is a schema no engine is asked to take.
_MAX_DEPTH = 64


def unsupported_keyword(schema: object, engine: SchemaEngine) -> str | None:
    """What in ``schema`` ``engine`` does not keep to (``"#/properties/x: pattern"``), or
    ``None`` when it keeps to all of it."""
    return _walk(schema, engine, "#", 0, root=True)


def _walk(schema: object, engine: SchemaEngine, path: str, depth: int, *, root: bool) -> str | None:
    if isinstance(schema, bool):
        return None if schema else f"{path}: false"
    if not isinstance(schema, Mapping):
        return f"{path}: not a schema"
    if depth > _MAX_DEPTH:
        return f"{path}: nested past {_MAX_DEPTH}"
    for key, value in schema.items():
        if key in _ANNOTATIONS:
            continue
        if key not in engine.keywords:
            return f"{path}: {key}"
        if key == "type" and isinstance(value, list) and not engine.type_lists and len(schema) > 1:
            return f"{path}: type list"
        found = _children(key, value, engine, f"{path}/{key}", depth)
        if found is not None:
            return found
    if engine.strict_objects:
        return _strict_object(schema, path, root=root)
    return None


def _children(key: str, value: Any, engine: SchemaEngine, path: str, depth: int) -> str | None:
    if key == "additionalProperties" and isinstance(value, bool):
        return None  # a closed or an open object: every engine here reads both
    if key in _ONE:
        return _walk(value, engine, path, depth + 1, root=False)
    if key in _LIST:
        if not isinstance(value, list):
            return f"{path}: not a list"
        items: Iterable[tuple[str, object]] = ((str(i), item) for i, item in enumerate(value))
    elif key in _MAP:
        if not isinstance(value, Mapping):
            return f"{path}: not an object"
        items = ((str(name), item) for name, item in value.items())
    else:
        return None
    for name, item in items:
        found = _walk(item, engine, f"{path}/{name}", depth + 1, root=False)
        if found is not None:
            return found
    return None


def _strict_object(schema: Mapping[str, Any], path: str, *, root: bool) -> str | None:
    """OpenAI's strict mode: the root is an object; every object is closed and requires every
    property it names."""
    kind = schema.get("type")
    is_object = kind == "object" or (isinstance(kind, list) and "object" in kind)
    if root and not is_object:
        return f"{path}: root not an object"
    if not is_object and "properties" not in schema:
        return None
    if schema.get("additionalProperties") is not False:
        return f"{path}: additionalProperties not false"
    properties = schema.get("properties") or {}
    required = schema.get("required") or []
    if not isinstance(properties, Mapping) or not isinstance(required, list):
        return f"{path}: properties"
    missing = sorted(set(properties) - {name for name in required if isinstance(name, str)})
    if missing:
        return f"{path}: optional property {missing[0]!r}"
    return None


class ConstraintOptions(msgspec.Struct, frozen=True, kw_only=True):
    """Whether a re-ask may be constrained: ``enabled`` (off per proxy, per transport, or per
    request: the ``x-toolwire-constrain: off`` header) and ``off_tools``, the tools never
    constrained (a tool whose schema the judge checks in ways no grammar can, say)."""

    enabled: bool = True
    off_tools: frozenset[str] = frozenset()


#: Every option on: the default.
CONSTRAIN: Final = ConstraintOptions()


def skipped(tool: str | None, why: str, detail: str = "") -> Constraint:
    """A re-ask that is not constrained, and why."""
    return Constraint(tool=tool, skipped=why, detail=detail)


def constrained_reask(
    body: Mapping[str, Any],
    turn: Turn,
    constrain: Callable[[Mapping[str, Any], str], Constraint],
    options: ConstraintOptions = CONSTRAIN,
) -> Constraint | None:
    """The re-ask of ``body`` (the follow-up of ``turn``, every result appended) constrained
    to the tool of its rejected call by ``constrain`` (the format's ``WireFormat.constrained``),
    or why it is not; ``None`` when no call of ``turn`` was rejected (there is nothing to ask
    again: prose stays prose).
    """
    rejected = [call for call in turn.calls if call.verdict is not None and not call.may_run]
    if not rejected:
        return None
    names = {call.name for call in rejected}
    tool = next(iter(names)) if len(names) == 1 else None
    if not options.enabled:
        return skipped(tool, "off")
    verdicts = [call.verdict for call in rejected if call.verdict is not None]
    if any(call.truncated for call in rejected) or any(v.truncated for v in verdicts):
        return skipped(tool, "truncated")
    reasons = sorted({str(verdict.reason) for verdict in verdicts} - set(CONSTRAINABLE))
    if reasons:
        return skipped(tool, "reason", reasons[0])
    if len(rejected) > 1:
        return skipped(tool, "several_calls", str(len(rejected)))
    if not tool:
        return skipped(None, "no_tool_named")
    if tool in options.off_tools:
        return skipped(tool, "off", "tool")
    return constrain(body, tool)


#: A tool's ``parameters`` when it has none: an object with nothing in it.
NO_PARAMETERS: Mapping[str, Any] = {"type": "object", "properties": {}}


def function_name(tool: Mapping[str, Any]) -> object:
    """The name of a ``tools`` entry of Chat's (and Ollama's) shape (``{"type": "function",
    "function": {"name": ...}}``)."""
    function = tool.get("function")
    return function.get("name") if isinstance(function, Mapping) else None


def find_tool(
    tools: object, tool: str, name_of: Callable[[Mapping[str, Any]], object]
) -> Mapping[str, Any] | None:
    """The one entry of ``tools`` (a list) whose name (``name_of``) is ``tool``; ``None`` when
    there is none, or more than one (a name offered twice names no one tool)."""
    if not isinstance(tools, list):
        return None
    found = [item for item in tools if isinstance(item, Mapping) and name_of(item) == tool]
    return found[0] if len(found) == 1 else None


class Forcing(msgspec.Struct, frozen=True, kw_only=True):
    """How a server is asked for one tool's call on an endpoint other than Chat's (a format's
    data, one per kind of upstream): ``mechanism`` names it; ``engine`` is the schema the
    server's engine keeps to whole (``None``: the tool is forced, its schema not promised)."""

    mechanism: str
    engine: SchemaEngine | None = None


#: The key of a format's forcing for its hosted API (the upstream is no local server).
HOSTED: Final = ""


def forcing_for(table: Mapping[str, Forcing], upstream: str, local: bool) -> Forcing | None:
    """The forcing of ``table`` for an upstream named ``upstream``: the hosted API's
    (:data:`HOSTED`) unless it is a local server, then that server's own, if it has one."""
    return table.get(upstream) if local else table.get(HOSTED)


def schema_checked(tool: str, schema: object, engine: SchemaEngine | None) -> Constraint | None:
    """The ``schema_unsupported`` answer when ``engine`` does not keep to ``schema``, else
    ``None`` (no engine: nothing to check)."""
    if engine is None:
        return None
    unsupported = unsupported_keyword(schema, engine)
    return None if unsupported is None else skipped(tool, "schema_unsupported", unsupported)


#: Request keys that already ask a server for a structured output: a client's own format is
#: never replaced by a re-ask's.
FORMAT_KEYS: Final = ("json_schema", "grammar", "response_format", "guided_json", "format")


def call_envelope(tool: str, schema: object) -> dict[str, Any]:
    """The JSON Schema of one call of ``tool`` written as a JSON object, ``{"name": tool,
    "arguments": {...}}``: what a server whose structured output constrains the text (not a
    call) is asked to write, so that the text is that call, which toolwire reads as a call
    left in the text (``docs/text-calls.md``) and judges as any call."""
    return {
        "type": "object",
        "properties": {"name": {"const": tool}, "arguments": schema},
        "required": ["name", "arguments"],
        "additionalProperties": False,
    }
