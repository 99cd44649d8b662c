"""Benchmark: three ways to validate tool arguments, side by side in one run (issue 19, part 1).

Run from the repository root: ``python bench/bench_schema_engines.py [--runs R]`` (needs
``jsonschema-rs`` and ``google-re2`` installed; ``toolwire`` itself is measured as shipped).

The engines:

- ``jsonschema``: what toolwire used before issue 19: ``check_schema`` then a validator, every
  ``pattern`` / ``patternProperties`` run by Python's backtracking ``re``;
- ``jsonschema+re2``: the same, with the regex keywords (``pattern``, ``patternProperties``,
  ``additionalProperties``) and the ``regex`` format re-implemented on ``google-re2``, and
  every pattern of the schema compiled by RE2 up front (RE2 refuses lookaround and
  backreferences). ``unevaluatedProperties`` and the legacy-draft keywords would need copies of
  jsonschema internals too: left out here, so this engine is measured at its most favourable;
- ``jsonschema-rs``: the Rust validator with its linear-time engine (``RegexOptions``),
  offline; its compile checks the schema against its meta-schema and resolves every ``$ref``;
- ``toolwire``: ``toolwire.judge.SchemaChecker`` as shipped (jsonschema-rs plus the message
  translation, the nesting guard and the error paths).

Workloads: compiling the project's realistic tool schemas (the five tools of the recorded
llama.cpp agent, and one richer MCP-style tool with ``$defs``, ``anyOf``, enums and patterns);
validating a good and a bad call of each; compiling a list of 1,000 distinct tools; and the
catastrophic pattern ``^(a+)+$`` against ``"a" * n + "!"``. Figures are the minimum over
``--runs`` runs, printed as a ratio to ``jsonschema`` (what toolwire did before). The last
table shows how each engine treats ECMA-262 patterns: refused when compiled, or the answer it
gives.
"""

from __future__ import annotations

import argparse
import copy
import json
import re
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import jsonschema
import jsonschema_rs
import re2
from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError
from jsonschema.validators import extend

from toolwire.core.errors import ConfigurationError
from toolwire.judge import SchemaChecker

RECORDED = (
    Path(__file__).resolve().parents[1] / "recordings" / "llama_cpp_edit_complete.request.json"
)

RICH: dict[str, Any] = {
    "type": "object",
    "properties": {
        "repository": {"type": "string", "pattern": "^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$"},
        "title": {"type": "string", "minLength": 1, "maxLength": 256},
        "body": {"type": "string"},
        "labels": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
        "assignees": {"type": "array", "items": {"$ref": "#/$defs/login"}, "maxItems": 10},
        "milestone": {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}]},
        "priority": {"enum": ["low", "normal", "high", "urgent"]},
        "metadata": {
            "type": "object",
            "patternProperties": {"^x-[a-z]+$": {"type": "string"}},
            "additionalProperties": False,
        },
    },
    "required": ["repository", "title"],
    "additionalProperties": False,
    "$defs": {"login": {"type": "string", "pattern": "^[A-Za-z0-9-]{1,39}$"}},
}

GOOD: dict[str, dict[str, Any]] = {
    "write": {"path": "notes.txt", "content": "hello\n" * 20},
    "read": {"path": "notes.txt"},
    "edit": {"path": "notes.txt", "old": "hello", "new": "bye"},
    "search": {"pattern": "TODO"},
    "run": {"command": "ls -la"},
    "create_issue": {
        "repository": "octo/toolwire",
        "title": "Paths escape /v1",
        "labels": ["security", "serve"],
        "assignees": ["lead"],
        "milestone": None,
        "priority": "high",
        "metadata": {"x-team": "proxy"},
    },
}
BAD: dict[str, dict[str, Any]] = {
    "write": {"path": 3, "extra": True},
    "read": {},
    "edit": {"path": "a", "old": 1},
    "search": {"pattern": ["x"]},
    "run": {"command": None, "cwd": "/"},
    "create_issue": {
        "repository": "not a repo",
        "title": "",
        "labels": ["a", "a"],
        "assignees": ["-" * 50],
        "priority": "soon",
        "metadata": {"team": "proxy"},
    },
}


def realistic_tools() -> dict[str, dict[str, Any]]:
    """Tool name -> parameters: the recorded agent's five tools and the rich one."""
    request = json.loads(RECORDED.read_text(encoding="utf-8"))
    tools = {tool["function"]["name"]: tool["function"]["parameters"] for tool in request["tools"]}
    tools["create_issue"] = RICH
    return tools


# -- jsonschema + google-re2 -------------------------------------------------------------------

_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False  # RE2 logs every refused pattern to stderr otherwise


def _re2(pattern: str) -> Any:
    return re2.compile(pattern, _RE2_OPTIONS)


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if validator.is_type(instance, "string") and not _re2(pattern).search(instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(
    validator: Any, patterns: Mapping[str, Any], instance: Any, schema: Any
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        compiled = _re2(pattern)
        for key, value in instance.items():
            if compiled.search(key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(
    validator: Any, additional: Any, instance: Any, schema: Any
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    declared = schema.get("properties", {})
    patterns = [_re2(p) for p in schema.get("patternProperties", {})]
    extras = [k for k in instance if k not in declared and not any(p.search(k) for p in patterns)]
    if validator.is_type(additional, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], additional, path=extra)
    elif not additional and extras:
        listed = ", ".join(repr(extra) for extra in extras)
        yield ValidationError(f"Additional properties are not allowed ({listed} were unexpected)")


_RE2_CHECKER = jsonschema.FormatChecker()


@_RE2_CHECKER.checks("regex", raises=re2.error)
def _is_re2(instance: object) -> bool:
    if isinstance(instance, str):
        _re2(instance)
    return True


Re2Validator = extend(
    Draft202012Validator,
    {
        "pattern": _pattern,
        "patternProperties": _pattern_properties,
        "additionalProperties": _additional_properties,
    },
)


def _re2_patterns(schema: Any) -> Iterator[str]:
    """Every pattern of ``schema``, walked by keyword (a property may be called ``pattern``)."""
    stack = [schema]
    while stack:
        node = stack.pop()
        if not isinstance(node, Mapping):
            continue
        if isinstance(node.get("pattern"), str):
            yield node["pattern"]
        for key in ("properties", "patternProperties", "$defs", "definitions"):
            children = node.get(key)
            if isinstance(children, Mapping):
                if key == "patternProperties":
                    yield from children
                stack.extend(children.values())
        for key in ("items", "additionalProperties", "not", "propertyNames", "contains"):
            stack.append(node.get(key))
        for key in ("anyOf", "allOf", "oneOf", "prefixItems"):
            if isinstance(node.get(key), list):
                stack.extend(node[key])


# -- the engines: compile(schema) -> validator, errors(validator, instance) -> list ------------

Engine = tuple[Callable[[dict[str, Any]], Any], Callable[[Any, Any], list[Any]]]


def _compile_jsonschema(schema: dict[str, Any]) -> Any:
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def _compile_re2(schema: dict[str, Any]) -> Any:
    Re2Validator.check_schema(schema, format_checker=_RE2_CHECKER)
    for pattern in _re2_patterns(schema):
        _re2(pattern)
    return Re2Validator(schema)


def _compile_rs(schema: dict[str, Any]) -> Any:
    return jsonschema_rs.validator_for(
        schema,
        pattern_options=jsonschema_rs.RegexOptions(),
        validate_formats=False,
        offline=True,
    )


def _errors(validator: Any, instance: Any) -> list[Any]:
    return list(validator.iter_errors(instance))


def _compile_toolwire(schema: dict[str, Any]) -> Any:
    return SchemaChecker(schema, tool="bench")


def _problems_toolwire(checker: Any, instance: Any) -> list[Any]:
    return list(checker.problems(instance))


ENGINES: dict[str, Engine] = {
    "jsonschema": (_compile_jsonschema, _errors),
    "jsonschema+re2": (_compile_re2, _errors),
    "jsonschema-rs": (_compile_rs, _errors),
    "toolwire": (_compile_toolwire, _problems_toolwire),
}


def best(run: Callable[[], object], runs: int) -> float:
    """The minimum over ``runs`` of one call of ``run``, in seconds."""
    fastest = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        run()
        fastest = min(fastest, time.perf_counter() - start)
    return fastest


def thousand_tools() -> list[dict[str, Any]]:
    """1,000 distinct tool schemas (fresh objects: nothing is cached by identity)."""
    tools = []
    for index in range(1000):
        schema = copy.deepcopy(RICH)
        schema["properties"][f"field_{index}"] = {"type": "string", "maxLength": index + 1}
        tools.append(schema)
    return tools


def _row(name: str, seconds: dict[str, float], unit: float, label: str) -> None:
    base = seconds["jsonschema"]
    cells = "".join(
        f"{value * unit:>12.1f}{f'(x{value / base:.2f})':>10}" for value in seconds.values()
    )
    print(f"{name:<34}{cells}  {label}")


def speed(runs: int) -> None:
    tools = realistic_tools()
    header = "".join(f"{engine:>22}" for engine in ENGINES)
    print(f"{'workload (us, ratio to jsonschema)':<34}{header}")
    for name, schema in tools.items():
        compile_s = {
            engine: best(lambda c=compile_, s=schema: c(copy.deepcopy(s)), runs)
            for engine, (compile_, _) in ENGINES.items()
        }
        _row(f"compile {name}", compile_s, 1e6, "")
    for which, calls in (("good", GOOD), ("bad", BAD)):
        for name, schema in tools.items():
            validate_s = {}
            counts = []
            for engine, (compile_, errors) in ENGINES.items():
                validator = compile_(copy.deepcopy(schema))
                counts.append(len(errors(validator, calls[name])))
                validate_s[engine] = best(
                    lambda v=validator, e=errors, i=calls[name]: e(v, i), runs * 20
                )
            _row(f"validate {which} {name}", validate_s, 1e6, f"errors {counts}")
    many = thousand_tools()
    thousand = {
        engine: best(lambda c=compile_: [c(s) for s in copy.deepcopy(many)], max(1, runs // 3))
        for engine, (compile_, _) in ENGINES.items()
    }
    _row("compile 1,000 tools (ms)", thousand, 1e3, "")


def catastrophic(runs: int) -> None:
    schema = {"type": "object", "properties": {"s": {"type": "string", "pattern": "^(a+)+$"}}}
    print("\n^(a+)+$ against 'a' * n + '!' (ms per validation)")
    print(f"{'n':>6}" + "".join(f"{engine:>16}" for engine in ENGINES))
    for n in (16, 18, 20, 22, 27, 100_000):
        cells = []
        for engine, (compile_, errors) in ENGINES.items():
            if engine == "jsonschema" and n > 22:
                cells.append(f"{'(skipped)':>16}")  # doubles per character: 27 takes seconds
                continue
            validator = compile_(copy.deepcopy(schema))
            hostile = {"s": "a" * n + "!"}
            seconds = best(lambda v=validator, e=errors, h=hostile: e(v, h), runs)
            cells.append(f"{seconds * 1e3:>16.3f}")
        print(f"{n:>6}" + "".join(cells))


ECMA = {
    "lookahead (?=a)a": ("(?=a)a", "a"),
    "lookbehind (?<!x)y": ("(?<!x)y", "y"),
    "backreference (a)\\1": ("(a)\\1", "aa"),
    "named backref (?<n>a)\\k<n>": ("(?<n>a)\\k<n>", "aa"),
    "\\d vs Arabic-Indic 3": ("^\\d$", "\u0663"),
    "$ before a final newline": ("^a$", "a\n"),
    "a{1001}": ("^a{1001}$", "a" * 1001),
    "\\p{L} (u-flag syntax)": ("^\\p{L}$", "\u00e9"),
    "[^] (any character)": ("^[^]$", "x"),
}


def _ecma_answer(engine: str, pattern: str, text: str) -> str:
    compile_, errors = ENGINES[engine]
    schema = {"type": "object", "properties": {"s": {"type": "string", "pattern": pattern}}}
    try:
        validator = compile_(schema)
    except (jsonschema.SchemaError, re2.error, ValueError, ConfigurationError):
        return "refused"
    return "no match" if errors(validator, {"s": text}) else "match"


def ecma() -> None:
    print("\nECMA-262 patterns: refused when compiled, or the answer given")
    print(f"{'pattern':<30}" + "".join(f"{engine:>16}" for engine in ENGINES) + f"{'ECMA-262':>12}")
    truth = {
        "lookahead (?=a)a": "match",
        "lookbehind (?<!x)y": "match",
        "backreference (a)\\1": "match",
        "named backref (?<n>a)\\k<n>": "match",
        "\\d vs Arabic-Indic 3": "no match",
        "$ before a final newline": "no match",
        "a{1001}": "match",
        "\\p{L} (u-flag syntax)": "no match",
        "[^] (any character)": "match",
    }
    for name, (pattern, text) in ECMA.items():
        cells = "".join(f"{_ecma_answer(engine, pattern, text):>16}" for engine in ENGINES)
        print(f"{name:<30}{cells}{truth[name]:>12}")
    assert re.compile("^a$").search("a\n")  # Python's `$` matches before a final newline


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9, help="runs per measurement (minimum)")
    args = parser.parse_args()
    speed(args.runs)
    catastrophic(max(1, args.runs // 3))
    ecma()


if __name__ == "__main__":
    main()
