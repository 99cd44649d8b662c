"""ruff and mypy --strict are part of the test command, so CI cannot be green without them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, check=False
    )


def test_ruff_is_clean() -> None:
    result = _run("ruff", "check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_strict_is_clean(tmp_path: Path) -> None:
    # The repository root is the package, whatever the clone's folder is called: give mypy a
    # folder in which it is named ``toolwire``, and check the package as a user imports it.
    (tmp_path / "toolwire").symlink_to(ROOT, target_is_directory=True)
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--config-file", str(ROOT / "pyproject.toml"),
         "--cache-dir", str(tmp_path / ".mypy_cache"), "-p", "toolwire"],
        cwd=tmp_path, env={**os.environ, "MYPYPATH": str(tmp_path)},
        capture_output=True, text=True, check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
