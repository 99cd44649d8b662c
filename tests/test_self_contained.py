"""The suite runs from a clone alone: no source reaches outside the repository for its data.

The tests once read their recordings and vectors from a ``shared/`` folder beside the checkout
(``Path(__file__).resolve().parents[2] / "shared"``, ``ROOT.parent / "shared"``...), and a fresh
clone without it failed at collection. The data now lives in ``tests/data/`` (its provenance and
hashes in ``tests/data/PROVENANCE.md``), found through ``tests/data_paths.py``. Three checks:

- every path that a module of the project (package, tests, benchmarks) builds from its own
  ``__file__`` is evaluated from the module's source and must stay inside the root, and no
  string names the old ``shared/`` data;
- every file of ``tests/data/`` has the sha256 its provenance gives;
- (``slow``) the project's files copied to a folder with nothing beside them, the package
  imported from that copy, collect the quick tier without an error.
"""

from __future__ import annotations

import ast
import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path, PurePosixPath

import pytest
from data_paths import DATA

ROOT = Path(__file__).resolve().parents[1]

#: A string that names the old data beside the checkout (``../shared``, ``shared/fixtures``...).
OLD_DATA = re.compile(r"\.\./shared\b|\bshared/(?:fixtures|vectors)\b")

#: Calls that keep their path argument's value (``Path(x)``, ``os.path.abspath(x)``...).
_SAME_PATH = frozenset({"Path", "PurePath", "PosixPath", "abspath", "realpath", "normpath"})
#: Methods of a path that keep its value.
_SAME_PATH_METHODS = frozenset({"resolve", "absolute", "expanduser"})
#: Top-level folders of a checkout that hold no project file (beside ``.venv*`` and eggs).
_NOT_SOURCE = frozenset(
    {".git", ".hypothesis", ".mypy_cache", ".ruff_cache", ".pytest_cache", ".benchmarks", "build"}
)


def project_files(root: Path) -> list[PurePosixPath]:
    """The project's files under ``root``: git's tracked and addable ones, or every file.

    Virtualenvs (``.venv``, ``.venv-dev``...), git's folder and tools' caches hold no project
    source, whether or not an ignore rule covers them.
    """
    result = subprocess.run(
        ["git", "-C", str(root), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True, check=False,
        env={k: v for k, v in os.environ.items() if k not in ("GIT_DIR", "GIT_WORK_TREE")},
    )  # fmt: skip
    if result.returncode == 0 and result.stdout:
        listed = result.stdout.decode("utf-8", "surrogateescape").split("\0")
        names = [PurePosixPath(name) for name in listed if name]
    else:
        names = [PurePosixPath(p.relative_to(root).as_posix()) for p in root.rglob("*")]
    return sorted(
        name
        for name in names
        if not name.parts[0].startswith(".venv")
        and name.parts[0] not in _NOT_SOURCE
        and not name.parts[0].endswith(".egg-info")
        and "__pycache__" not in name.parts
        and (root / name).is_file()
    )


class _PathBuilder(ast.NodeVisitor):
    """Evaluates, in source order, every expression that builds a path from ``__file__``.

    Names assigned such a path (``ROOT = Path(__file__).resolve().parents[1]``) are followed in
    later expressions (``ROOT.parent / "shared"``). What it cannot evaluate (a path built from
    a variable it does not know) it leaves alone: it answers for ``__file__`` arithmetic only.
    """

    def __init__(self, file: Path) -> None:
        self.file = file
        #: Names bound to a path (or a path's text) built from ``__file__``.
        self.names: dict[str, Path | str] = {}
        #: ``(line, path)`` of every path expression built from ``__file__``.
        self.built: list[tuple[int, Path]] = []

    def from_file(self, node: ast.AST) -> bool:
        return any(
            isinstance(name, ast.Name) and (name.id == "__file__" or name.id in self.names)
            for name in ast.walk(node)
        )

    def value(self, node: ast.AST) -> Path | str | None:
        """The path (or text) ``node`` evaluates to, when it is built from ``__file__``."""
        match node:
            case ast.Name(id="__file__"):
                return str(self.file)
            case ast.Name(id=name):
                return self.names.get(name)
            case ast.Constant(value=str() as text):
                return text
            case ast.Call(func=ast.Name(id=f) | ast.Attribute(attr=f), args=[arg]) if (
                f in _SAME_PATH
            ):
                found = self.value(arg)
                return Path(found) if found is not None else None
            case ast.Call(func=ast.Name(id="str"), args=[arg]):
                found = self.value(arg)
                return str(found) if found is not None else None
            case ast.Call(func=ast.Attribute(value=inner, attr=method), args=[]) if (
                method in _SAME_PATH_METHODS
            ):
                return self.value(inner)
            case (
                ast.Call(func=ast.Attribute(attr="dirname"), args=[arg])
                | ast.Attribute(value=arg, attr="parent")
            ):
                found = self.value(arg)
                return Path(found).parent if found is not None else None
            case ast.Subscript(
                value=ast.Attribute(value=inner, attr="parents"),
                slice=ast.Constant(value=int() as up),
            ):
                found = self.value(inner)
                if found is None:
                    return None
                parents = Path(found).parents
                return parents[up] if up < len(parents) else Path(Path(found).anchor)
            case ast.BinOp(left=left, op=ast.Div(), right=right):
                base, part = self.value(left), self.value(right)
                return base / part if isinstance(base, Path) and part is not None else None
            case ast.Call(
                func=ast.Attribute(value=ast.Attribute(attr="path"), attr="join"),
                args=[first, *rest],
            ):
                return self.joined(first, rest)  # os.path.join(a, b, ...)
            case ast.Call(func=ast.Attribute(value=inner, attr="joinpath"), args=rest):
                return self.joined(inner, rest)
        return None

    def joined(self, first: ast.AST, rest: list[ast.expr]) -> Path | None:
        parts = [self.value(part) for part in [first, *rest]]
        if any(part is None for part in parts):
            return None
        return Path(*(str(part) for part in parts))

    def generic_visit(self, node: ast.AST) -> None:
        if isinstance(node, ast.expr) and self.from_file(node):
            found = self.value(node)
            if isinstance(found, Path):
                self.built.append((node.lineno, found))
        super().generic_visit(node)

    def bind(self, target: ast.expr, value: ast.expr | None) -> None:
        if isinstance(target, ast.Name) and value is not None and self.from_file(value):
            found = self.value(value)
            if found is not None:
                self.names[target.id] = found

    def visit_Assign(self, node: ast.Assign) -> None:
        self.generic_visit(node)
        for target in node.targets:
            self.bind(target, node.value)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self.generic_visit(node)
        self.bind(node.target, node.value)


def outside_paths(root: Path, name: PurePosixPath, source: str) -> list[str]:
    """Where the module ``name`` (its ``source``) reaches outside ``root``: ``file:line: why``."""
    tree = ast.parse(source, filename=str(name))
    builder = _PathBuilder(root / name)
    if "__file__" in source:  # no other module can build a path from its own place
        builder.visit(tree)
    outside: dict[int, Path] = {}  # by line, the longest path built there (the whole expression)
    for line, path in builder.built:
        normal = Path(os.path.normpath(path))
        if normal.is_absolute() and not normal.is_relative_to(root):
            if len(str(normal)) >= len(str(outside.get(line, ""))):
                outside[line] = normal
    found = [f"{name}:{line}: builds {path}, outside {root}" for line, path in outside.items()]
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if OLD_DATA.search(node.value):
                found.append(f"{name}:{node.lineno}: names the data beside the checkout")
    return sorted(set(found))


def python_sources(root: Path) -> list[PurePosixPath]:
    return [name for name in project_files(root) if name.suffix == ".py"]


def test_no_source_reaches_outside_the_repository() -> None:
    sources = python_sources(ROOT)
    assert PurePosixPath("tests/conftest.py") in sources  # the walk found the project
    found = [
        problem
        for name in sources
        for problem in outside_paths(ROOT, name, (ROOT / name).read_text(encoding="utf-8"))
    ]
    assert not found, "\n".join(found)


# The check itself, on sources as they were before the data moved, and as they are now.
_BEFORE = {
    "tests/conftest.py": 'SHARED = Path(__file__).resolve().parents[2] / "shared"\n',
    "tests/e2e/loopback.py": (
        "ROOT = Path(__file__).resolve().parents[2]\n"
        'STREAMS = ROOT.parent / "shared" / "fixtures" / "streams"\n'
    ),
    "tests/judge/test_v.py": (
        'VECTORS = Path(__file__).resolve().parents[3] / "shared" / "vectors" / "tool_args.jsonl"\n'
    ),
    "bench/b.py": (
        "HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))\n"
        'V = os.path.join(HERE, "..", "x")\n'
    ),
    # Split here, so that this file holds no such string itself.
    "tests/loop/test_p.py": "CUT = '" + "../sha" + "red/fixtures/streams/x.sse'\n",
    "tests/serve/test_s.py": "def f():\n    return Path(__file__).parent.parent.parent.parent\n",
}
_NOW = {
    "tests/data_paths.py": 'DATA = Path(__file__).resolve().parent / "data"\n',
    "tests/e2e/loopback.py": "ROOT = Path(__file__).resolve().parents[2]\nDOCS = ROOT / 'docs'\n",
    "tests/stages/t/test_x.py": (
        'sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "adapters"))\n'
    ),
    "bench/b.py": "sys.path.insert(0, str(Path(__file__).resolve().parents[1] / 'tests'))\n",
    "tests/demo/test_sandbox.py": 'BAD = ["../outside.txt", "/etc/passwd"]\n',
}


@pytest.mark.parametrize("name", sorted(_BEFORE))
def test_the_check_finds_a_path_that_leaves_the_root(name: str, tmp_path: Path) -> None:
    source = _BEFORE[name]
    found = outside_paths(tmp_path, PurePosixPath(name), source)
    # Found on the last line of each snippet, the one that leaves the root, and only there.
    assert {problem.split(": ", 1)[0] for problem in found} == {f"{name}:{source.count(chr(10))}"}


@pytest.mark.parametrize("name", sorted(_NOW))
def test_the_check_passes_a_path_inside_the_root(name: str, tmp_path: Path) -> None:
    assert outside_paths(tmp_path, PurePosixPath(name), _NOW[name]) == []


_LISTED = re.compile(r"^([0-9a-f]{64})  (\S.*)$", re.MULTILINE)


def test_every_data_file_has_the_sha256_its_provenance_gives() -> None:
    listed = dict(
        (name, digest)
        for digest, name in _LISTED.findall((DATA / "PROVENANCE.md").read_text(encoding="utf-8"))
    )
    present = {
        path.relative_to(DATA).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in DATA.rglob("*")
        if path.is_file() and path.name != "PROVENANCE.md"
    }
    assert present == listed


@pytest.mark.slow  # a collection of the whole suite: about 10 s of CPU
def test_a_copy_with_nothing_beside_it_collects_the_quick_tier(tmp_path: Path) -> None:
    # The copy is named ``main`` inside a folder that holds nothing else; the package is
    # imported from the copy (``toolwire`` in a view put first on ``PYTHONPATH``), not from the
    # editable install of this checkout.
    copy = tmp_path / "alone" / "main"
    for name in project_files(ROOT):
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, copy / name)
    view = tmp_path / "view"
    view.mkdir()
    (view / "toolwire").symlink_to(copy, target_is_directory=True)
    assert sorted(p.name for p in copy.parent.iterdir()) == ["main"]
    env = {**os.environ, "PYTHONPATH": str(view)}
    where = subprocess.run(
        [sys.executable, "-c", "import toolwire; print(toolwire.__file__)"],
        cwd=copy, env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert Path(where.stdout.strip()).resolve().is_relative_to(copy.resolve())
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", "not slow",
         "-p", "no:cacheprovider"],
        cwd=copy, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-4000:]
    assert "error" not in output.lower().splitlines()[-1], output[-4000:]
