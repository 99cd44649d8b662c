"""ruff and mypy --strict are part of the test command, so CI cannot be green without them.

Both check the files of the project, not whatever lies in the checkout: a virtualenv that is not
called ``.venv`` (``env/``, ``venv/`` with a stray module), a scratch file that git ignores, must
not fail the suite. The project's files are what git tracks plus what it would offer to add
(untracked and not ignored, so that a new module is checked before its first commit). Without
git, or outside a checkout, every file under the repository is checked, as before.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # see docs/development.md

ROOT = Path(__file__).resolve().parents[1]

#: What ruff lints by default, less notebooks (the project has none).
PYTHON_PATTERNS = ("*.py", "*.pyi")

#: Variables that point git at another repository (set inside git hooks): the question is always
#: about the folder given.
_GIT_LOCATION = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE")


def _git_lines(root: Path, *args: str) -> list[str] | None:
    """The NUL-separated output of ``git -C root ARGS``, or ``None`` when git cannot answer."""
    env = {name: value for name, value in os.environ.items() if name not in _GIT_LOCATION}
    try:
        result = subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, env=env, check=False
        )
    except OSError:  # git is not installed
        return None
    if result.returncode != 0:  # not a checkout (or git refuses it)
        return None
    return [line for line in result.stdout.decode("utf-8", "surrogateescape").split("\0") if line]


def project_python_files(root: Path) -> list[str] | None:
    """The Python files of the checkout at ``root``, relative and sorted; ``None``: ask no git.

    Tracked files plus untracked ones that no ignore rule covers; a tracked file deleted from
    the work tree is left out. ``None`` too when git lists no file at all, so that the caller's
    fallback (the whole folder) never turns into checking nothing.
    """
    tracked = _git_lines(root, "ls-files", "-z", "--", *PYTHON_PATTERNS)
    untracked = _git_lines(
        root, "ls-files", "-z", "--others", "--exclude-standard", "--", *PYTHON_PATTERNS
    )
    if tracked is None or untracked is None:
        return None
    files = sorted(name for name in {*tracked, *untracked} if (root / name).is_file())
    return files or None


def ruff_command(root: Path) -> list[str]:
    """``ruff check`` over the project's files (``.`` without git).

    ``--force-exclude`` keeps the configured and default excludes (``build``, ``.venv``...)
    for files named on the command line, as they are for a folder.
    """
    files = project_python_files(root)
    if files is None:
        return [sys.executable, "-m", "ruff", "check", "."]
    return [sys.executable, "-m", "ruff", "check", "--force-exclude", "--", *files]


def package_view(root: Path, folder: Path) -> Path:
    """``folder/toolwire``: the project's files under the package's name, for ``mypy -p``.

    ``mypy -p toolwire`` walks every folder of the package whose name is an identifier, as a
    namespace package: ``venv/stray.py`` would be checked as ``toolwire.venv.stray``. So the
    view holds copies of the project's files only; without git it is a link to the whole root.
    """
    view = folder / "toolwire"
    files = project_python_files(root)
    if files is None:
        view.symlink_to(root, target_is_directory=True)
        return view
    for name in files:
        target = view / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / name, target)
    return view


def run_mypy(folder: Path, *options: str) -> subprocess.CompletedProcess[str]:
    """``mypy --strict -p toolwire`` run in ``folder``, which holds the package's view."""
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", *options,
         "--cache-dir", str(folder / ".mypy_cache"), "-p", "toolwire"],
        cwd=folder, env={**os.environ, "MYPYPATH": str(folder)},
        capture_output=True, text=True, check=False,
    )


def test_ruff_is_clean() -> None:
    result = subprocess.run(
        ruff_command(ROOT), cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_strict_is_clean(tmp_path: Path) -> None:
    # The repository root is the package, whatever the clone's folder is called: give mypy a
    # folder in which it is named ``toolwire``, and check the package as a user imports it.
    package_view(ROOT, tmp_path)
    result = run_mypy(tmp_path, "--config-file", str(ROOT / "pyproject.toml"))
    assert result.returncode == 0, result.stdout + result.stderr


def _git(root: Path, *args: str) -> None:
    env = {name: value for name, value in os.environ.items() if name not in _GIT_LOCATION}
    subprocess.run(["git", "-C", str(root), *args], env=env, check=True, capture_output=True)


#: Clean under ruff's defaults and under mypy --strict.
CLEAN = "VALUE: int = 1\n"
#: An unused import for ruff, a wrong type for mypy.
BAD = 'import os\n\nVALUE: int = "one"\n'


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A throwaway checkout: tracked modules, an untracked one, and ignored ``venv/``, ``env/``."""
    root = tmp_path / "checkout"
    (root / "pkg").mkdir(parents=True)
    _git(root, "init", "-q")
    (root / ".gitignore").write_text("env/\nvenv/\n")
    (root / "__init__.py").write_text("")
    (root / "pkg" / "__init__.py").write_text(CLEAN)
    (root / "tracked.py").write_text(CLEAN)
    _git(root, "add", ".gitignore", "__init__.py", "pkg/__init__.py", "tracked.py")
    (root / "untracked.py").write_text(CLEAN)
    for ignored in ("env", "venv"):
        (root / ignored).mkdir()
        (root / ignored / "bad.py").write_text(BAD)
    return root


def test_project_files_are_tracked_and_addable_never_ignored(checkout: Path) -> None:
    assert project_python_files(checkout) == [
        "__init__.py", "pkg/__init__.py", "tracked.py", "untracked.py",
    ]
    (checkout / "tracked.py").unlink()  # deleted, not yet staged: nothing to check
    assert project_python_files(checkout) == ["__init__.py", "pkg/__init__.py", "untracked.py"]


def test_ruff_checks_an_untracked_module_and_no_ignored_one(checkout: Path) -> None:
    def ruff() -> subprocess.CompletedProcess[str]:
        command = ruff_command(checkout)
        return subprocess.run(command, cwd=checkout, capture_output=True, text=True, check=False)

    clean = ruff()
    assert clean.returncode == 0, clean.stdout + clean.stderr
    (checkout / "untracked.py").write_text(BAD)
    dirty = ruff()
    assert dirty.returncode == 1
    assert "untracked.py" in dirty.stdout
    assert "bad.py" not in dirty.stdout


def test_mypy_checks_the_project_files_not_an_ignored_virtualenv(
    checkout: Path, tmp_path: Path
) -> None:
    # mypy knows nothing of .gitignore: on the whole folder, ``-p`` walks into env/ and venv/.
    whole = tmp_path / "whole"
    whole.mkdir()
    (whole / "toolwire").symlink_to(checkout, target_is_directory=True)
    walked = run_mypy(whole)
    assert walked.returncode == 1
    assert "env/bad.py" in walked.stdout
    assert "venv/bad.py" in walked.stdout
    view = tmp_path / "view"
    view.mkdir()
    package_view(checkout, view)
    checked = run_mypy(view)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "Success: no issues found in 4 source files" in checked.stdout


def test_without_a_checkout_everything_is_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "plain"
    folder.mkdir()
    (folder / "module.py").write_text(CLEAN)
    # However the temporary folder is placed, git must not find a checkout above it.
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    assert project_python_files(folder) is None
    assert ruff_command(folder)[-2:] == ["check", "."]
    view = package_view(folder, tmp_path)
    assert view.is_symlink()
    assert view.resolve() == folder.resolve()
