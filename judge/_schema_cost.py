"""What checking arguments against a JSON Schema can cost, bounded when the schema is compiled.

Checking one call costs about the arguments' size times the schema's, and a hostile schema can
make the second factor huge from a few hundred bytes (issue 29, H2): ``"a\\w{1000}c"`` (the
regex engine's lazy DFA gives up and its automaton runs ~1,000 states per character: 14 µs per
character of the argument), ``$defs`` that each name the previous one twice (2**n subschemas for
every value: 22 definitions, 1.5 KB of schema, cost 0.12 s per value, and each one more doubles
it), or ``items`` whose ``anyOf`` has 500 branches. So a schema is measured when it is
compiled, and refused (a ``ConfigurationError``, a 400 in the proxy) past these bounds:

- a pattern that repeats one part more than :data:`MAX_PATTERN_REPEAT` times (``{n}``,
  ``{n,m}``, nested counts multiplied): a length limit belongs in ``maxLength``;
- a pattern whose compiled program is over :data:`REGEX_SIZE_LIMIT` bytes (the regex
  engine's own ``size_limit``, given to ``jsonschema-rs`` as ``RegexOptions``);
- more than :data:`MAX_SUBSCHEMAS` subschemas to run for one value, counted through every
  ``$ref`` (a reference costs what it points to, each time it is used).

What remains is priced (:class:`SchemaCost`): an estimate, in nanoseconds per character of
arguments, that the judge stage uses to decide whether a call can be checked on the event loop
or must be checked in a worker process with a time budget. The estimate is an upper bound from
measurements (``bench/bench_schema_cost.py``), pessimistic on purpose: a call
priced too high is only checked elsewhere, never wrongly.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from jsonschema.protocols import Validator
from referencing import Specification
from referencing.exceptions import Unresolvable

from ._schema_refs import offline_root

if TYPE_CHECKING:
    from referencing._core import Resolver  # not re-exported by referencing

__all__ = [
    "FREE",
    "MAX_PATTERN_REPEAT",
    "MAX_SUBSCHEMAS",
    "REGEX_SIZE_LIMIT",
    "CostProblem",
    "PatternShape",
    "SchemaCost",
    "pattern_shape",
    "repeat_problem",
    "schema_cost",
]

#: The most times one part of a pattern may repeat (``\w{256}``; ``(\w{16}){16}``).
MAX_PATTERN_REPEAT = 256
#: The largest compiled pattern, in bytes (the regex crate's default is 10 MiB): ``\w{256}``
#: compiles to about 25 KB, ``.{256}`` to about 340 KB, ``\p{L}`` alone to 43 KB.
REGEX_SIZE_LIMIT = 1024 * 1024
#: The most subschemas one value may be checked against, references expanded.
MAX_SUBSCHEMAS = 10_000

#: Checking one value against one subschema, in nanoseconds: ~6 ns measured for ``anyOf`` of
#: ``const`` branches over a 10,000-item array; a subschema may hold several keywords.
NS_PER_SUBSCHEMA = 50
#: A pattern whose automaton can hold this many states at once may overflow the lazy DFA's
#: cache; the engine then falls back to a slower simulation costing about 1 µs per character
#: plus 15 ns per state (on random two-letter text, ``a\w{30}c``: 1.2-1.6 µs; ``a\w{1000}c``:
#: 14 µs; ``a.{1000}c``: 21 µs).
_DFA_SAFE_POSITIONS = 16
_NS_SLOW_SEARCH = 1_000
_NS_PER_POSITION = 15

_QUANTIFIER = re.compile(r"\{(\d*)(?:(,)(\d*))?\}")


@dataclass(frozen=True, slots=True)
class PatternShape:
    """What a pattern's automaton looks like, read from its text.

    ``repeat``: the most times one part repeats (counted quantifiers, nested ones multiplied);
    ``positions``: its atoms, each counted as often as it repeats (about the automaton's states).
    """

    repeat: int
    positions: int

    @property
    def ns_per_char(self) -> int:
        """The worst cost of searching one character of text, in nanoseconds."""
        slow = _NS_SLOW_SEARCH if self.positions >= _DFA_SAFE_POSITIONS else 0
        return slow + _NS_PER_POSITION * self.positions


def _class_end(pattern: str, start: int) -> int:
    """The index after the ``]`` that closes the class opened at ``start``."""
    index = start + 1
    if pattern.startswith("^", index):
        index += 1
    if pattern.startswith("]", index):  # first in a class: a literal, as the Rust engine reads it
        index += 1
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            index += 2
        elif char == "]":
            return index + 1
        else:
            index += 1
    return len(pattern)


def _escape_end(pattern: str, start: int) -> int:
    """The index after the escape that starts at ``start`` (``\\p{L}``, ``\\u{1F600}``...)."""
    index = start + 2
    if pattern[start + 1 : start + 2] in ("p", "P", "u", "x", "k") and pattern.startswith(
        ("{", "<"), index
    ):
        close = pattern.find("}" if pattern[index] == "{" else ">", index)
        return len(pattern) if close < 0 else close + 1
    return index


def _group_start(pattern: str, start: int) -> int:
    """The index after the opening of the group at ``start``: ``(``, ``(?:``, ``(?=``,
    ``(?!``, ``(?<=``, ``(?<!`` or ``(?<name>``."""
    index = start + 1
    if not pattern.startswith("?", index):
        return index
    if pattern.startswith(("?<=", "?<!"), index):
        return index + 3
    if pattern.startswith("?<", index):
        close = pattern.find(">", index)
        return len(pattern) if close < 0 else close + 1
    return index + 2


@functools.lru_cache(maxsize=1024)
def pattern_shape(pattern: str) -> PatternShape:
    """Read the shape of an ECMA-262 pattern (what a JSON Schema ``pattern`` is written in).

    Only what sizes the automaton is read: atoms, groups, alternatives and counted quantifiers.
    A ``{`` that does not make a quantifier is a literal, as ECMA-262 reads it. The engine
    itself still parses the pattern; this reading only prices it.
    """
    # Each open group: [positions of its finished alternatives, of the current one, repeat].
    groups: list[list[int]] = [[0, 0, 1]]
    last: tuple[int, int] | None = None  # the previous atom: (positions, repeat)
    index = 0
    length = len(pattern)
    while index < length:
        char = pattern[index]
        top = groups[-1]
        if char == "(":
            index = _group_start(pattern, index)
            groups.append([0, 0, 1])
            last = None
            continue
        if char == ")" and len(groups) > 1:
            done = groups.pop()
            last = (done[0] + done[1], done[2])
            groups[-1][1] += last[0]
            groups[-1][2] = max(groups[-1][2], last[1])
            index += 1
            continue
        if char == "|":
            top[0] += top[1]
            top[1] = 0
            last = None
            index += 1
            continue
        if char in "*+?":
            index += 1
            if pattern.startswith("?", index):  # lazy
                index += 1
            continue  # no more states than once: the automaton loops
        if char == "{":
            quantifier = _QUANTIFIER.match(pattern, index)
            if quantifier is not None and (quantifier.group(1) or quantifier.group(3)):
                low, _, high = quantifier.groups()
                count = max(int(low or 0), int(high or 0))
                index = quantifier.end()
                if pattern.startswith("?", index):
                    index += 1
                if last is not None:
                    positions, repeat = last
                    top[1] += positions * (count - 1)
                    last = (positions * count, repeat * count)
                    top[2] = max(top[2], last[1])
                continue
        if char == "[":
            end = _class_end(pattern, index)
        elif char == "\\":
            end = _escape_end(pattern, index)
        else:
            end = index + 1
        index = end
        last = (1, 1)
        top[1] += 1
    while len(groups) > 1:  # unbalanced: the engine refuses it; price what was read
        done = groups.pop()
        groups[-1][1] += done[0] + done[1]
        groups[-1][2] = max(groups[-1][2], done[2])
    root = groups[0]
    return PatternShape(repeat=root[2], positions=root[0] + root[1])


@dataclass(frozen=True, slots=True)
class SchemaCost:
    """What one JSON Schema costs to run, measured when it is compiled.

    ``subschemas``: how many subschemas one value can be checked against, references expanded;
    ``pattern_ns``: the worst cost of all its patterns for one character of text, in ns.
    """

    subschemas: int
    pattern_ns: int

    def estimate_ns(self, values: int, characters: int) -> int:
        """An upper bound, in ns, on checking ``values`` values written in ``characters``."""
        return values * self.subschemas * NS_PER_SUBSCHEMA + characters * self.pattern_ns


#: The cost of a pydantic model: not priced (it is the program's own code, not a client's).
FREE = SchemaCost(subschemas=0, pattern_ns=0)

#: Why a schema is past a bound: where (a path of keys in the schema) and what, in one clause.
CostProblem = tuple[tuple[str | int, ...], str]
Path = tuple[str | int, ...]

# How each applicator keyword reaches its subschemas (drafts 4 to 2020-12), as data. "in place"
# subschemas check the same value as their parent, so their costs add up; the others check the
# value's items, members or keys. Of those, the entries of ``properties`` and of ``prefixItems``
# (and of a draft-7 ``items`` list) check different members, so only the costliest counts; every
# other one may check the same member as its siblings (``items`` and ``contains``, two
# ``patternProperties`` matching one key), so they add up. ``$defs`` applies nothing itself.
_REFERENCES = ("$ref", "$dynamicRef", "$recursiveRef")
#: keyword -> (how its subschemas add up, whether it holds several: a list or a map of them).
#: A draft-7 ``items`` list is read as ``prefixItems``; a draft-7 ``dependencies`` entry that
#: is a list of names is not a subschema.
_APPLICATORS: dict[str, tuple[str, bool]] = {
    **dict.fromkeys(("not", "if", "then", "else"), ("", False)),
    **dict.fromkeys(("allOf", "anyOf", "oneOf", "dependentSchemas", "dependencies"), ("", True)),
    **dict.fromkeys(
        (
            "items",
            "additionalItems",
            "additionalProperties",
            "contains",
            "propertyNames",
            "unevaluatedItems",
            "unevaluatedProperties",
        ),
        ("*", False),
    ),
    "properties": ("properties", True),  # one member each: the costliest counts
    "prefixItems": ("prefixItems", True),
    "patternProperties": ("*", True),  # several may match one member: they add up
}


def _patterns(contents: Mapping[str, Any]) -> Iterator[tuple[str, Path]]:
    """Every pattern a subschema runs on its own value, with its place under the subschema:
    ``pattern``, and each ``patternProperties`` key (run on the value's keys)."""
    pattern = contents.get("pattern")
    if isinstance(pattern, str):
        yield pattern, ("pattern",)
    keyed = contents.get("patternProperties")
    if keyed is not None and isinstance(keyed, Mapping):
        for key in keyed:
            if isinstance(key, str):
                yield key, ("patternProperties", key)


class _Cost:
    """A subschema's sums while it is walked: on its own value (``here``) and on any one value
    below it (``below``), in subschemas and in pattern nanoseconds per character."""

    __slots__ = ("below", "below_ns", "groups", "here", "here_ns")

    def __init__(self, here_ns: int) -> None:
        self.here = 1
        self.here_ns = here_ns
        self.below = 0
        self.below_ns = 0
        #: The costliest entry so far of each keyword whose entries check different members.
        self.groups: dict[str, tuple[int, int]] = {}

    def total(self) -> tuple[int, int, int, int]:
        below = self.below + sum(count for count, _ in self.groups.values())
        below_ns = self.below_ns + sum(ns for _, ns in self.groups.values())
        return self.here, self.here_ns, below, below_ns


#: A finished subschema: (here, here_ns, below, below_ns).
_Done = tuple[int, int, int, int]
#: How a child adds to its parent: in place, on members, or on members as one entry of ``key``.
_IN_PLACE, _MEMBERS = "", "*"


#: A subschema being walked: its key, its children still to visit, its sums so far.
_Frame = tuple[int, Iterator[tuple[str, object, "Resolver[Any]", Path]], _Cost]


def _target(ref: str, through: Path) -> Path:
    """Where ``ref`` points in the schema, to name it: its JSON pointer when it is one
    (``#/$defs/a``), else the place of the reference itself."""
    if not ref.startswith("#/"):
        return through
    return tuple(unquote(part).replace("~1", "/").replace("~0", "~") for part in ref[2:].split("/"))


def _is_schema(value: object) -> bool:
    """A subschema: an object or a boolean (``dict`` first: nearly every one is)."""
    return type(value) is dict or type(value) is bool or isinstance(value, Mapping)


def _capped(count: int) -> int:
    return min(count, MAX_SUBSCHEMAS + 1)


class _Walk:
    """The cost of every subschema applied from the root, each reference costing what it points
    to, and the first pattern that repeats too much.

    Iterative (a chain of references may be thousands long) and memoized by subschema, so the
    walk is linear in the schema even when its expansion is exponential. A reference back to a
    subschema being walked (recursion) costs one: it is entered once per level of the
    arguments, which are bounded apart. Only applied subschemas are walked: a ``$defs`` entry
    nothing refers to is never run, so never priced (nor refused).
    """

    def __init__(self, specification: Specification[Any]) -> None:
        self.specification = specification
        self.memo: dict[int, _Done] = {}
        self.problem: CostProblem | None = None

    def _inside(self, resolver: Resolver[Any], child: object) -> Resolver[Any]:
        """The resolver for ``child``: a new base URI only where it declares one."""
        if type(child) is not bool and ("$id" in child or "id" in child):  # type: ignore[operator]
            return resolver.in_subresource(self.specification.create_resource(child))
        return resolver

    def _children(
        self, contents: Mapping[str, Any], resolver: Resolver[Any], path: Path
    ) -> Iterator[tuple[str, object, Resolver[Any], Path]]:
        """Each subschema ``contents`` applies, with how it adds up (see ``_APPLICATORS``)."""
        for keyword, value in contents.items():
            if keyword in _REFERENCES:
                if not isinstance(value, str):
                    continue
                try:
                    resolved = resolver.lookup(value)
                except (Unresolvable, ValueError):  # pragma: no cover - refused when compiled
                    continue
                where = _target(value, (*path, keyword))
                yield _IN_PLACE, resolved.contents, resolved.resolver, where
                continue
            applicator = _APPLICATORS.get(keyword)
            if applicator is None:
                continue
            how, several = applicator
            if keyword == "items" and type(value) is list:
                how, several = "prefixItems", True
            if not several:
                if _is_schema(value):
                    yield how, value, self._inside(resolver, value), (*path, keyword)
                continue
            entries = (
                value.items() if isinstance(value, Mapping)
                else enumerate(value) if type(value) is list else ()
            )  # fmt: skip
            for key, child in entries:
                if _is_schema(child):
                    yield how, child, self._inside(resolver, child), (*path, keyword, key)

    def _own_ns(self, contents: object, path: Path) -> int:
        """What the subschema's own patterns cost per character; notes one that repeats too much."""
        if type(contents) is bool or not isinstance(contents, Mapping):
            return 0
        total = 0
        for pattern, place in _patterns(contents):
            if self.problem is None:
                problem = repeat_problem(pattern)
                if problem is not None:
                    self.problem = (*path, *place), problem
            total += pattern_shape(pattern).ns_per_char
        return total

    def cost(self, root: Mapping[str, Any], resolver: Resolver[Any]) -> _Done:
        """The root's (here, here_ns, below, below_ns)."""
        stack: list[tuple[str, _Frame]] = []
        on_path: set[int] = set()
        result: _Done | None = None

        def add(how: str, parent: _Cost, done: _Done) -> None:
            here, here_ns, below, below_ns = done
            if how == _IN_PLACE:
                parent.here = _capped(parent.here + here)
                parent.here_ns += here_ns
                parent.below = _capped(parent.below + below)
                parent.below_ns += below_ns
                return
            one = (max(here, below), max(here_ns, below_ns))
            if how == _MEMBERS:
                parent.below = _capped(parent.below + one[0])
                parent.below_ns += one[1]
                return
            best = parent.groups.get(how, (0, 0))
            parent.groups[how] = (max(best[0], one[0]), max(best[1], one[1]))

        def enter(how: str, contents: object, resolver: Resolver[Any], path: Path) -> _Done | None:
            key = id(contents)
            known = self.memo.get(key)
            if known is not None:
                return known
            if key in on_path:
                return (1, 0, 0, 0)
            cost = _Cost(self._own_ns(contents, path))
            children = (
                self._children(contents, resolver, path) if isinstance(contents, Mapping)
                else iter(())
            )  # fmt: skip
            on_path.add(key)
            stack.append((how, (key, children, cost)))
            return None

        enter(_IN_PLACE, root, resolver, ())
        while stack:
            how, (key, children, cost) = stack[-1]
            child = next(children, None)
            if child is not None:
                found = enter(*child)
                if found is not None:
                    add(child[0], cost, found)
                continue
            stack.pop()
            on_path.discard(key)
            done = cost.total()
            done = (_capped(done[0]), done[1], _capped(done[2]), done[3])
            self.memo[key] = done
            if stack:
                add(how, stack[-1][1][2], done)
            else:
                result = done
        assert result is not None
        return result


def schema_cost(
    schema: Mapping[str, Any], validator_class: type[Validator]
) -> tuple[SchemaCost, CostProblem | None]:
    """The cost of ``schema`` (valid against its meta-schema, every reference resolvable),
    and why it cannot be used when it is past a bound (``None`` when it can)."""
    specification, _, resolver = offline_root(schema, validator_class)
    walk = _Walk(specification)
    here, here_ns, below, below_ns = walk.cost(schema, resolver)
    subschemas, pattern_ns = max(here, below), max(here_ns, below_ns)
    problem = walk.problem
    if problem is None and subschemas > MAX_SUBSCHEMAS:
        problem = (
            (),
            (
                f"checking one value can take more than {MAX_SUBSCHEMAS:,} subschemas, counting "
                "each $ref as what it points to (toolwire runs at most that many: a definition "
                "that names another twice doubles the work at each step)"
            ),
        )
    return SchemaCost(subschemas=subschemas, pattern_ns=pattern_ns), problem


def repeat_problem(pattern: str) -> str | None:
    """Why ``pattern`` repeats too much to be run, or ``None``."""
    repeat = pattern_shape(pattern).repeat
    if repeat <= MAX_PATTERN_REPEAT:
        return None
    return (
        f"{json.dumps(pattern, ensure_ascii=False):.200} repeats a part {repeat:,} times "
        f"(toolwire runs at most {MAX_PATTERN_REPEAT}; a length limit belongs in maxLength)"
    )
