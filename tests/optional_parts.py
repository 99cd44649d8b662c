"""Optional parts of the set-up: a test needing one skips in the quick tier, fails in a full run.

The full suite (``pytest``, as ``.ci/run`` runs it) installs every extra and never skips its real
parts: there a missing part is a broken set-up, and the test that needs it fails, loudly. The
quick tier (``pytest -m "not slow"``, docs/development.md) must also run in a virtualenv with
``[dev]`` alone: there a test (or a whole module, when it is called at module level) that needs
a module of another extra skips, naming what to install, instead of failing to collect. Only an
absent part skips: one installed but broken fails to import in both tiers.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Sequence
from types import ModuleType
from typing import NoReturn

import pytest

#: True when the run leaves the ``slow`` tier out. ``tests/conftest.py`` sets it before any test
#: module is read; outside pytest (a benchmark importing a test module) it stays False.
quick_tier = False

#: How to install each optional part a test imports, by its top-level module name.
INSTALL: dict[str, str] = {
    "llama_cpp": "the [local] extra: pip install -e '.[dev,local]' (llama-cpp-python compiles)",
    "rich": "the [demo] extra: pip install -e '.[dev,demo]'",
    "matplotlib": "the [demo] extra: pip install -e '.[dev,demo]'",
    "fastapi": "the [phoenix] or [local] extra (LiteLLM's proxy brings it too): "
    "pip install -e '.[dev,phoenix]'",
    "phoenix": "the [phoenix] extra: pip install -e '.[dev,phoenix]'",
}


def part_missing(part: str, missing: Sequence[str]) -> NoReturn:
    """Skip in the quick tier, fail in the full run: ``missing`` (modules of ``part``) is absent."""
    message = f"{', '.join(missing)} not installed, from {INSTALL[part]}"
    if quick_tier:
        pytest.skip(f"{message} (the full suite fails without it)", allow_module_level=True)
    pytest.fail(f"{message}; the full suite never skips it", pytrace=False)


def optional_module(name: str) -> ModuleType:
    """``import name``, a module of an optional part listed in :data:`INSTALL` (by its top level).

    When the part is absent: a skip in the quick tier, a failure in the full run.
    """
    part = name.partition(".")[0]
    if part not in INSTALL:
        raise KeyError(f"{part} is not an optional part of the set-up: import it directly")
    if importlib.util.find_spec(part) is None:
        part_missing(part, [part])
    return importlib.import_module(name)
