"""The arrows of the package go one way: cli -> api -> loop / stages / adapters -> judge -> core.

Every import of every module of the package is read from its source (absolute ``toolwire.x``
and relative ``..x`` alike, including imports inside functions and under ``TYPE_CHECKING``) and
checked against the layer table below. ``docs/design.md`` draws the same picture. Inside a
part, modules may import each other, but never in a circle (``TYPE_CHECKING`` edges count: a
circle a type checker needs is a circle in the design).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: What each top-level part of the package may import (besides itself).
ALLOWED: dict[str, frozenset[str]] = {
    "core": frozenset(),
    "judge": frozenset({"core"}),
    "adapters": frozenset({"core"}),
    "stages": frozenset({"judge", "core"}),
    # The loop helpers write history in each provider's format, which lives with its adapter.
    "loop": frozenset({"adapters", "core"}),
    # The kits judge what an adapter produces, as a pipeline would.
    "testing": frozenset({"stages", "judge", "core"}),
    "recordings": frozenset(),
    "api": frozenset({"loop", "stages", "adapters", "judge", "core"}),
    # The other public tiers (``docs/design.md``) only re-export, like ``__init__``:
    # the events from the core, the extension machinery from every layer that defines some.
    "events": frozenset({"core"}),
    "lowlevel": frozenset({"loop", "stages", "adapters", "judge", "core"}),
    # Self-healing (the proxy and the httpx transport) is built on the public entry points.
    "heal": frozenset({"api", "loop", "stages", "adapters", "judge", "core"}),
    # The proxy is a shell around the healing transport.
    "serve": frozenset({"heal", "api", "loop", "stages", "adapters", "judge", "core"}),
    # A gateway's guardrail (LiteLLM's) is a shell around the healing session, like the proxy.
    "gateway": frozenset({"heal", "api", "loop", "stages", "adapters", "judge", "core"}),
    "cli": frozenset(
        {
            "serve",
            "gateway",
            "heal",
            "api",
            "loop",
            "stages",
            "adapters",
            "judge",
            "core",
            "recordings",
        }
    ),
}
#: The package's own ``__init__`` re-exports the public API from every layer but the CLI.
TOP_INIT_ALLOWED = frozenset(ALLOWED) - {"cli", "gateway"}


def _package_modules() -> list[Path]:
    skip = {"tests", "bench", "docs", ".venv", "venv", "build"}
    return sorted(
        path
        for path in ROOT.rglob("*.py")
        if not ({part for part in path.relative_to(ROOT).parts} & skip)
        and not any(part.startswith(".") for part in path.relative_to(ROOT).parts)
    )


def _part_of(module_path: tuple[str, ...]) -> str:
    """The top-level part (``core``, ``api``...) of a module path inside the package."""
    return module_path[0] if module_path else "__init__"


def _imported_targets(relative: Path, source: str) -> Iterator[tuple[str, ...]]:
    """Every ``toolwire`` name ``source`` (the module at ``relative``) imports, as a path.

    ``from .x import y`` gives ``(..., "x", "y")``: ``y`` may be a module or a name in ``x``.
    """
    here = list(relative.parts[:-1])  # the package the module lives in
    tree = ast.parse(source)
    for node in ast.walk(tree):
        targets: list[list[str]] = []
        if isinstance(node, ast.ImportFrom):
            if node.level == 0:
                if node.module and node.module.split(".")[0] == "toolwire":
                    base = node.module.split(".")[1:]
                    targets = [[*base, alias.name] for alias in node.names]
            else:
                up = here[: len(here) - (node.level - 1)] if node.level > 1 else here
                if node.level - 1 > len(here):
                    raise AssertionError(f"{relative}: relative import above the package")
                base = up + (node.module.split(".") if node.module else [])
                targets = [[*base, alias.name] for alias in node.names]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "toolwire" and len(parts) > 1:
                    targets.append(parts[1:])
        for target in targets:
            yield tuple(target)


def _imported_parts(relative: Path, source: str) -> set[str]:
    """The parts of the package that ``source`` (the module at ``relative``) imports."""
    return {_part_of(target) for target in _imported_targets(relative, source)}


def _module_of(path: Path) -> tuple[str, ...]:
    """The module path of a file: ``core/wire.py`` -> ``("core", "wire")``; a package's
    ``__init__`` is the package itself (the top one: ``()``)."""
    parts = path.relative_to(ROOT).with_suffix("").parts
    return parts[:-1] if parts[-1] == "__init__" else parts


def _import_graph(
    sources: Mapping[tuple[str, ...], tuple[Path, str]],
) -> dict[tuple[str, ...], set[tuple[str, ...]]]:
    """Module -> the modules of the package it imports (``from p import m`` names ``p.m`` when
    ``m`` is a module, else ``p``)."""
    graph: dict[tuple[str, ...], set[tuple[str, ...]]] = {}
    for module, (relative, source) in sources.items():
        edges: set[tuple[str, ...]] = set()
        for target in _imported_targets(relative, source):
            if target in sources:
                edges.add(target)
            elif target[:-1] in sources:
                edges.add(target[:-1])
        edges.discard(module)
        graph[module] = edges
    return graph


def _circles(graph: Mapping[tuple[str, ...], set[tuple[str, ...]]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan), each sorted."""
    index: dict[tuple[str, ...], int] = {}
    low: dict[tuple[str, ...], int] = {}
    stack: list[tuple[str, ...]] = []
    on_stack: set[tuple[str, ...]] = set()
    found: list[list[str]] = []

    def visit(node: tuple[str, ...]) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group: list[tuple[str, ...]] = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(".".join(("toolwire", *m)) for m in group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


MODULES = _package_modules()


def test_every_part_has_a_rule() -> None:
    parts = {_part_of(path.relative_to(ROOT).with_suffix("").parts) for path in MODULES}
    assert parts - {"__init__"} <= set(ALLOWED), sorted(parts - set(ALLOWED))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_point_down(path: Path) -> None:
    relative = path.relative_to(ROOT).with_suffix("")
    own = _part_of(relative.parts)
    imported = _imported_parts(relative, path.read_text(encoding="utf-8")) - {own}
    if own == "__init__":
        allowed = TOP_INIT_ALLOWED | {"__init__"}
    else:
        allowed = ALLOWED[own]
    wrong = sorted(imported - allowed)
    assert not wrong, f"{relative} ({own}) imports {wrong}; {own} may import only {sorted(allowed)}"


def test_the_checker_sees_upward_imports() -> None:
    """The rule must be able to fail: upward imports of every spelling are found."""
    source = (
        "from ..api import collect\n"
        "from toolwire.loop import dispatch\n"
        "import toolwire.cli\n"
        "def late():\n    from .. import stages\n"
        "from . import events\n"
    )
    found = _imported_parts(Path("core/probe"), source)
    assert found == {"api", "loop", "cli", "stages", "core"}


def test_no_module_imports_itself_in_a_circle() -> None:
    sources = {
        _module_of(path): (path.relative_to(ROOT).with_suffix(""), path.read_text("utf-8"))
        for path in MODULES
    }
    assert _circles(_import_graph(sources)) == []


def test_the_checker_sees_circles() -> None:
    """The circle rule must be able to fail, a ``TYPE_CHECKING`` edge included."""
    sources = {
        ("heal",): (Path("heal/__init__"), ""),
        ("heal", "a"): (Path("heal/a"), "from .b import B\n"),
        ("heal", "b"): (Path("heal/b"), "from . import c\n"),
        ("heal", "c"): (
            Path("heal/c"),
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import A\n",
        ),
        ("heal", "d"): (Path("heal/d"), "from .a import A\n"),
    }
    assert _circles(_import_graph(sources)) == [
        ["toolwire.heal.a", "toolwire.heal.b", "toolwire.heal.c"]
    ]


def test_every_package_of_the_tree_is_installed() -> None:
    # pyproject lists the packages by hand (the repository root is the package): a package
    # left out is missing from every non-editable install, though an editable one finds it.
    import tomllib

    settings = tomllib.loads((ROOT / "pyproject.toml").read_text())
    listed = set(settings["tool"]["setuptools"]["packages"])
    in_tree = {
        ".".join(("toolwire", *path.parent.relative_to(ROOT).parts))
        for path in _package_modules()
        if path.name == "__init__.py"
    }
    assert listed == in_tree
