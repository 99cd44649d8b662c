"""The public surface, pinned: each public module's ``__all__`` is exactly its public names.

As httpx's ``test_exported_members.py`` does: a name defined or explicitly re-exported
(``from .x import Y as Y``) in a public module without an underscore is public, and must be in
``__all__``; everything in ``__all__`` must resolve; ``__all__`` is sorted the way ruff sorts it.
The top tier and the lower tier are also spelled out below, so that a change to the surface is
a visible change to this file. ``docs/design.md`` says what each tier is for.
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

import toolwire
from toolwire.core import events as core_events

#: Every module whose names users may import (``toolwire.heal`` for the healing guide,
#: ``toolwire.serve`` for the proxy's ASGI app).
PUBLIC_MODULES = (
    "toolwire",
    "toolwire.events",
    "toolwire.lowlevel",
    "toolwire.testing",
    "toolwire.heal",
    "toolwire.serve",
)

#: The top tier: what an agent loop uses every day.
TOP_LEVEL = [
    "DEFAULT_POLICY",
    "STRICT_POLICY",
    "CallRecord",
    "ConfigurationError",
    "HealingTransport",
    "HistoryError",
    "Pipeline",
    "PipelineOptions",
    "Policy",
    "ProviderStreamError",
    "RepairLoopGuard",
    "RunStop",
    "RunStopReason",
    "SourceTypeError",
    "ToolResult",
    "ToolwireError",
    "Turn",
    "Verdict",
    "__version__",
    "answer_every_call",
    "collect",
    "dispatch",
    "parse_arguments",
    "provider_names",
    "run_stop_reason",
    "stream",
]

#: The lower tier: what extending toolwire needs.
LOWLEVEL = [
    "TEXT_CALL_NEED_MORE",
    "Constraint",
    "EventStep",
    "HealEncoder",
    "HealPlan",
    "HistoryFormat",
    "HistoryProblem",
    "HistoryRepair",
    "JudgeStage",
    "MapperFactory",
    "MapperSettings",
    "ParserErrorFacts",
    "ParserErrorReader",
    "ProviderMapper",
    "Source",
    "Stage",
    "SyncStage",
    "TelemetryStage",
    "TextCall",
    "TextCallContext",
    "TextCallFound",
    "TextCallReader",
    "TextCallSkip",
    "TextCallStage",
    "Toolset",
    "TurnBuilder",
    "WireFormat",
    "event_stage",
    "history_format",
    "not_run_result",
    "register_parser_error",
    "register_text_call_reader",
    "rejected_result",
    "render_message",
    "text_call_families",
]

#: Underscored names that are public all the same.
PUBLIC_DUNDERS = frozenset({"__version__"})


def _module(name: str) -> ModuleType:
    return importlib.import_module(name)


def _top_level_statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The module's own statements, including those under ``if TYPE_CHECKING:`` or ``try:``."""
    for statement in body:
        yield statement
        if isinstance(statement, ast.If):
            yield from _top_level_statements(statement.body)
            yield from _top_level_statements(statement.orelse)
        elif isinstance(statement, ast.Try):
            for block in (statement.body, statement.orelse, statement.finalbody):
                yield from _top_level_statements(block)
            for handler in statement.handlers:
                yield from _top_level_statements(handler.body)


def _bound_names(statement: ast.stmt) -> list[str]:
    """The names ``statement`` defines, or re-exports explicitly (``import Y as Y``)."""
    if isinstance(statement, ast.Import | ast.ImportFrom):
        return [alias.asname for alias in statement.names if alias.asname == alias.name]
    if isinstance(statement, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
        return [statement.name]
    if isinstance(statement, ast.Assign):
        return [target.id for target in statement.targets if isinstance(target, ast.Name)]
    if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
        return [statement.target.id]
    return []


def public_names(module_name: str) -> set[str]:
    """The public names a module defines or re-exports, read from its source."""
    source = _module(module_name).__file__
    assert source is not None, module_name
    tree = ast.parse(Path(source).read_text(encoding="utf-8"))
    return {
        name
        for statement in _top_level_statements(tree.body)
        for name in _bound_names(statement)
        if not name.startswith("_") or name in PUBLIC_DUNDERS
    }


def ruff_order(names: list[str]) -> list[str]:
    """Ruff's RUF022 order: SCREAMING_CASE constants, then CamelCase classes, then the rest."""

    def key(name: str) -> tuple[int, str]:
        if name.isupper():
            return (0, name)
        return (1, name) if name[0].isupper() else (2, name)

    return sorted(names, key=key)


@pytest.mark.parametrize("module_name", PUBLIC_MODULES)
def test_all_is_exactly_the_public_names(module_name: str) -> None:
    exported: list[str] = _module(module_name).__all__
    assert len(exported) == len(set(exported)), f"{module_name}.__all__ names something twice"
    names = public_names(module_name)
    assert not names - set(exported), f"public in {module_name}, missing from __all__"
    assert not set(exported) - names, f"in {module_name}.__all__, not defined or re-exported"


@pytest.mark.parametrize("module_name", PUBLIC_MODULES)
def test_all_is_sorted(module_name: str) -> None:
    exported: list[str] = _module(module_name).__all__
    assert exported == ruff_order(exported)


@pytest.mark.parametrize("module_name", PUBLIC_MODULES)
def test_every_exported_name_resolves(module_name: str) -> None:
    module = _module(module_name)
    for name in module.__all__:
        assert getattr(module, name) is not None, f"{module_name}.{name}"


def test_the_top_tier_is_pinned() -> None:
    """About 25 daily names; every change to them shows up here."""
    assert toolwire.__all__ == TOP_LEVEL


def test_the_lower_tier_is_pinned() -> None:
    assert _module("toolwire.lowlevel").__all__ == LOWLEVEL


def _event_classes(base: type) -> Iterator[type]:
    for subclass in base.__subclasses__():
        if subclass.__module__ == core_events.__name__:
            yield subclass
        yield from _event_classes(subclass)


def test_every_event_class_is_in_the_events_tier() -> None:
    events = _module("toolwire.events")
    assert set(events.__all__) == set(core_events.__all__)
    for cls in {core_events.Event, *_event_classes(core_events.Event)}:
        assert getattr(events, cls.__name__) is cls, cls.__name__


def test_one_spelling_per_name_across_the_tiers() -> None:
    """A name lives in one tier: the top, the events or the lower tier, never two."""
    tiers = {name: set(_module(name).__all__) for name in PUBLIC_MODULES[:3]}
    for first, second in (
        ("toolwire", "toolwire.events"),
        ("toolwire", "toolwire.lowlevel"),
        ("toolwire.events", "toolwire.lowlevel"),
    ):
        assert not tiers[first] & tiers[second], (first, second)


def test_the_history_twins_are_pipeline_methods_only() -> None:
    """``pipeline.next_messages`` etc. are the one spelling; the free functions left the top."""
    for name in ("next_messages", "check_history", "ensure_well_formed"):
        assert callable(getattr(toolwire.Pipeline, name))
        for tier in PUBLIC_MODULES[:3]:
            assert not hasattr(_module(tier), name), f"{tier}.{name}"
