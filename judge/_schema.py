"""Validating parsed arguments against a tool's parameters (JSON Schema or a pydantic model).

Validators are compiled once per schema object and cached (by identity, bounded), because
building a validator costs far more than validating one small object: the hot path must not
rebuild them. Schemas are treated as immutable once used. Every error becomes one line
``<json path>: <what is wrong>``, sorted, so that messages are deterministic.

JSON Schemas are run by ``jsonschema-rs`` with its linear-time regex engine (the Rust ``regex``
crate, an RE2-class automaton): a ``pattern``, a ``patternProperties`` key or a
``propertyNames`` pattern never backtracks, so no argument can make the judge run for seconds
(issue 19: ``"^(a+)+$"`` against 27 ``a`` and a ``!`` took 12 s with Python's ``re``, on the
event loop of a shared proxy). A pattern that engine cannot express (lookaround,
backreferences) makes the schema unusable, found when it is compiled. ``bench/
bench_schema_engines.py`` compares it with ``jsonschema`` + ``google-re2``.

A schema that cannot be used (not a JSON Schema, a pattern that needs backtracking, a ``$ref``
that points nowhere or to another document, nesting too deep to compile) is a
``ConfigurationError`` naming the tool and the place in the schema, raised when the schema is
compiled; no validator exception ever leaves here, and no reference is ever fetched (the
validator is built offline; ``_schema_refs`` words the reference errors). So is a schema too
costly to run (issue 29, H2): a pattern that repeats a part too often or compiles too large,
or more subschemas per value than toolwire runs (``_schema_cost``, which also prices what is
left, so that the judge stage knows which calls to check away from the event loop).

Arguments are checked with the validator's yes/no answer first (``is_valid``: it stops at the
first failure), and only invalid ones are explained: every problem when that is cheap, else the
first one alone (``iter_errors`` builds every error at once, each ``anyOf`` error with every
branch's errors inside: 400 items against 500 branches took 4 s; ``validate`` stops at the
first error).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

import jsonschema
import jsonschema_rs
import pydantic

from ..core.errors import ConfigurationError
from ._reader import MAX_DEPTH
from ._schema_cost import FREE, REGEX_SIZE_LIMIT, SchemaCost, repeat_problem, schema_cost
from ._schema_refs import bad_reference

__all__ = [
    "FIRST_PROBLEM_ONLY",
    "MAX_LISTED_WORK",
    "MAX_SCHEMA_ERRORS",
    "SchemaChecker",
    "checker_for",
    "json_path",
]

#: At most this many schema errors are listed; the rest are counted.
MAX_SCHEMA_ERRORS = 20
#: Every problem is listed when the arguments' values times the schema's subschemas are at most
#: this; past it only the first is. Listing costs up to ~20 µs per pair (each ``anyOf`` error
#: holds every branch's error), so this bounds a listing to ~40 ms.
MAX_LISTED_WORK = 2_000
#: The line that ends the problems when only the first was looked for.
FIRST_PROBLEM_ONLY = (
    "... toolwire stopped at this first problem: listing every one for arguments this large "
    "against this schema would cost too much; there may be more"
)

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CACHE_SIZE = 256
_cache: dict[int, tuple[object, SchemaChecker]] = {}


def json_path(parts: Iterable[str | int]) -> str:
    """Render a location as a JSONPath: ``("items", 2, "name")`` is ``$.items[2].name``."""
    out = ["$"]
    for part in parts:
        if isinstance(part, int):
            out.append(f"[{part}]")
        elif _IDENTIFIER.fullmatch(part):
            out.append(f".{part}")
        else:
            out.append(f"[{json.dumps(part, ensure_ascii=False)}]")
    return "".join(out)


def _json_type(value: object) -> str:
    """The JSON name of a Python value's type."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _quote(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _keyword_value(schema: object, location: Iterable[str | int]) -> object:
    """The value at ``location`` (a path of keys) in ``schema``, or ``None`` when not there."""
    node = schema
    for part in location:
        if isinstance(node, Mapping) and isinstance(part, str):
            node = node.get(part)
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
        else:
            return None
    return node


def _validation_lines(
    error: jsonschema_rs.ValidationError, schema: Mapping[str, Any]
) -> list[tuple[str, str]]:
    """Translate one validator error into ``(path, problem)`` pairs, worded by toolwire."""
    parts = list(error.instance_path)
    path = json_path(parts)
    kind = error.kind
    if isinstance(kind, jsonschema_rs.ValidationErrorKind.Required):
        return [(path, f"missing required property {_quote(kind.property)}")]
    if isinstance(kind, jsonschema_rs.ValidationErrorKind.Type):
        # Named in the schema's own order (the validator sorts them).
        declared = _keyword_value(schema, error.schema_path)
        expected = declared if isinstance(declared, list | str) else kind.types
        names = " or ".join(expected) if isinstance(expected, list) else str(expected)
        return [(path, f"expected {names}, got {_json_type(error.instance)}")]
    if isinstance(kind, jsonschema_rs.ValidationErrorKind.AdditionalProperties):
        return [
            (json_path([*parts, key]), "unexpected property (the tool does not accept it)")
            for key in kind.unexpected
        ]
    if isinstance(kind, jsonschema_rs.ValidationErrorKind.Enum):
        allowed = ", ".join(_quote(v) for v in kind.options)
        return [(path, f"{_quote(error.instance)} is not one of {allowed}")]
    return [(path, error.message)]


def _pydantic_lines(error: pydantic.ValidationError) -> list[tuple[str, str]]:
    """Translate a pydantic validation error into ``(path, problem)`` pairs."""
    lines: list[tuple[str, str]] = []
    for item in error.errors(include_url=False):
        loc = [p for p in item["loc"] if isinstance(p, str | int)]
        if item["type"] == "missing" and loc:
            lines.append((json_path(loc[:-1]), f"missing required property {_quote(loc[-1])}"))
        elif item["type"] == "extra_forbidden":
            lines.append((json_path(loc), "unexpected property (the tool does not accept it)"))
        else:
            lines.append((json_path(loc), str(item["msg"])))
    return lines


def _whose(tool: str | None) -> str:
    return "a tool schema" if tool is None else f"the schema of tool {tool!r}"


class SchemaChecker:
    """A compiled check for one tool's parameters: a JSON Schema or a pydantic model.

    ``tool`` only names the tool in a ``ConfigurationError`` raised while compiling.
    """

    __slots__ = ("_recursive", "cost", "json_schema", "model", "tool", "validator")

    def __init__(
        self, schema: Mapping[str, Any] | type[pydantic.BaseModel], *, tool: str | None = None
    ) -> None:
        self.tool = tool
        self.model: type[pydantic.BaseModel] | None = None
        self.validator: jsonschema_rs.Validator | None = None
        self._recursive = False
        #: What checking against it costs; a pydantic model is the program's own code: unpriced.
        self.cost: SchemaCost = FREE
        if isinstance(schema, type) and issubclass(schema, pydantic.BaseModel):
            self.model = schema
            self.json_schema: dict[str, Any] = schema.model_json_schema()
            return
        if not isinstance(schema, Mapping):
            raise ConfigurationError(
                f"{_whose(tool)} must be a JSON Schema object or a pydantic model, "
                f"not {type(schema).__name__} {schema!r:.80}"
            )
        self.json_schema = dict(schema)
        self.validator = _compile(self.json_schema, tool)
        self._recursive = _has_reference(self.json_schema)
        self.cost = _priced(self.json_schema, tool)

    def declares(self, name: str) -> bool:
        """True when the parameters declare a property called ``name``."""
        if self.model is not None:
            fields = self.model.model_fields
            return name in fields or any(f.alias == name for f in fields.values())
        properties = self.json_schema.get("properties")
        return isinstance(properties, Mapping) and name in properties

    def problems(self, arguments: dict[str, Any]) -> list[str]:
        """Every way ``arguments`` fails the parameters, one ``path: problem`` line each."""
        pairs: list[tuple[str, str]] = []
        try:
            if self.model is not None:
                try:
                    self.model.model_validate(arguments)
                except pydantic.ValidationError as invalid:
                    pairs = _pydantic_lines(invalid)
            elif self.validator is not None:
                # A schema that refers to itself descends as deep as the arguments go, on the
                # native stack: past a few thousand levels the process would crash.
                if self._recursive and _deeper_than(arguments, MAX_DEPTH):
                    raise RecursionError
                validator = self.validator
                if validator.is_valid(arguments):
                    return []
                if _more_values_than(arguments, MAX_LISTED_WORK // max(1, self.cost.subschemas)):
                    try:
                        validator.validate(arguments)
                    except jsonschema_rs.ValidationError as first:
                        lines = [f"{p}: {q}" for p, q in _validation_lines(first, self.json_schema)]
                        return [*sorted(lines), FIRST_PROBLEM_ONLY]
                for problem in validator.iter_errors(arguments):
                    pairs.extend(_validation_lines(problem, self.json_schema))
        except RecursionError:
            return ["$: the arguments are nested too deeply to validate"]
        lines = sorted(f"{path}: {problem}" for path, problem in pairs)
        if len(lines) > MAX_SCHEMA_ERRORS:
            rest = len(lines) - MAX_SCHEMA_ERRORS
            lines = [*lines[:MAX_SCHEMA_ERRORS], f"... and {rest} more"]
        return lines

    def estimate_ns(self, raw: str) -> int:
        """An upper bound on checking the arguments written as ``raw``, in nanoseconds.

        Read from the text alone (three counts in C): its values are at most its commas, colons
        and opening brackets, plus one. A pydantic model is not priced (zero).
        """
        cost = self.cost
        if cost is FREE:
            return 0
        values = raw.count(",") + 2 * raw.count(":") + raw.count("[") + 1
        return cost.estimate_ns(values, len(raw))

    def costs_more_than(self, raw: str, ns: int) -> bool:
        """Whether :meth:`estimate_ns` of ``raw`` is over ``ns``; most calls are answered from
        their length alone (a text holds at most one value per character, plus one)."""
        length = len(raw)
        if self.cost.estimate_ns(length + 1, length) <= ns:
            return False
        return self.estimate_ns(raw) > ns


#: The regex engine of every pattern: linear time, no lookaround, no backreferences, and a
#: compiled program of at most ``REGEX_SIZE_LIMIT`` bytes.
_LINEAR_PATTERNS = jsonschema_rs.RegexOptions(size_limit=REGEX_SIZE_LIMIT)
_REFERENCE_KEYS = frozenset({"$ref", "$dynamicRef", "$recursiveRef"})


def _compile(schema: dict[str, Any], tool: str | None) -> jsonschema_rs.Validator:
    """A validator for a JSON Schema, or ``ConfigurationError`` saying why there is none.

    The dialect is the schema's ``$schema``, draft 2020-12 when it names none or one the
    validator does not know (as ``jsonschema`` did). Formats are annotations, not checked (as
    ``jsonschema`` without a format checker did); the schema's own patterns are checked against
    the meta-schema's ``regex`` format by the same linear-time engine.
    """
    cls = jsonschema_rs.validator_cls_for(schema)
    try:
        return cls(schema, validate_formats=False, pattern_options=_LINEAR_PATTERNS, offline=True)
    except jsonschema_rs.ValidationError as error:
        raise ConfigurationError(_unusable(schema, tool, error)) from None
    except jsonschema_rs.ReferencingError as error:  # pragma: no cover - reported as above
        raise ConfigurationError(f"{_whose(tool)} cannot be used: {error.message}") from None
    except (ValueError, TypeError) as error:
        # "Recursion limit reached" (more than about 120 levels of subschemas), or a value
        # that is not JSON.
        raise ConfigurationError(f"{_whose(tool)} cannot be compiled: {error}") from None


def _unusable(
    schema: dict[str, Any], tool: str | None, error: jsonschema_rs.ValidationError
) -> str:
    """Why ``schema`` cannot be used, in one line that names the tool and the place."""
    where = json_path(error.instance_path)
    if error.kind.name == "format" and isinstance(error.instance, str):
        pattern = error.instance
        too_costly = repeat_problem(pattern)
        if too_costly is None and _compiles_unbounded(pattern):
            too_costly = (
                f"{_quote(pattern)} compiles to more than {REGEX_SIZE_LIMIT:,} bytes (toolwire "
                "runs smaller patterns: fewer repetitions or smaller character classes)"
            )
        if too_costly is not None:
            return f"{_whose(tool)} is too costly to check: {where}: {too_costly}"
        return (
            f"{_whose(tool)} has a pattern toolwire cannot run in linear time: {where}: "
            f"{_quote(pattern)} (toolwire never runs a regex that can backtrack: lookaround, "
            "backreferences and a few other constructs are refused)"
        )
    if not error.instance_path:
        # A reference that does not resolve: worded by the offline walk, which names it.
        python_class = jsonschema.validators.validator_for(
            schema, default=jsonschema.Draft202012Validator
        )
        problem = bad_reference(schema, python_class)
        if problem is not None:
            return f"{_whose(tool)} cannot be used: {problem}"
        return f"{_whose(tool)} cannot be used: {error.message}"
    return f"{_whose(tool)} is not a valid JSON Schema: {where}: {error.message}"


def _compiles_unbounded(pattern: str) -> bool:
    """Whether ``pattern`` compiles with the engine's own size limit (10 MiB), which is what
    tells a pattern over toolwire's limit from one that needs backtracking."""
    try:
        jsonschema_rs.validator_for(
            {"pattern": pattern}, pattern_options=jsonschema_rs.RegexOptions()
        )
    except jsonschema_rs.ValidationError:
        return False
    return True


def _priced(schema: dict[str, Any], tool: str | None) -> SchemaCost:
    """The cost of a compiled schema, or ``ConfigurationError`` when it is past a bound."""
    python_class = jsonschema.validators.validator_for(
        schema, default=jsonschema.Draft202012Validator
    )
    cost, problem = schema_cost(schema, python_class)
    if problem is not None:
        where, why = problem
        raise ConfigurationError(
            f"{_whose(tool)} is too costly to check: {json_path(where)}: {why}"
        )
    return cost


def _more_values_than(value: object, limit: int) -> bool:
    """Whether ``value`` holds more than ``limit`` values and keys (it stops counting there)."""
    count = 0
    stack = [value]
    while stack:
        node = stack.pop()
        count += 1
        if isinstance(node, Mapping):
            count += len(node)
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
        if count > limit:
            return True
    return False


def _has_reference(schema: object) -> bool:
    """Whether ``schema`` holds a reference anywhere (and so may descend without end)."""
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, Mapping):
            if not _REFERENCE_KEYS.isdisjoint(node):
                return True
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return False


def _deeper_than(value: object, limit: int) -> bool:
    """Whether ``value`` nests containers more than ``limit`` levels deep (no recursion)."""
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, Mapping):
            children: Iterable[object] = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if depth >= limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def checker_for(
    schema: Mapping[str, Any] | type[pydantic.BaseModel], *, tool: str | None = None
) -> SchemaChecker:
    """The compiled checker for ``schema``, built once per schema object.

    ``tool`` names the tool in the ``ConfigurationError`` raised for an unusable schema.
    """
    entry = _cache.get(id(schema))
    if entry is not None and entry[0] is schema:
        return entry[1]
    checker = SchemaChecker(schema, tool=tool)
    if len(_cache) >= _CACHE_SIZE:
        try:
            _cache.pop(next(iter(_cache)), None)
        except (RuntimeError, StopIteration):  # another thread changed the cache meanwhile
            pass
    _cache[id(schema)] = (schema, checker)
    return checker
