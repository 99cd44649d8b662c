"""The demo's tools never reach outside their temporary folder, and ``run`` starts no process."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from toolwire.cli.demo.sandbox import SEED_FILES, TOOLS, Sandbox, SandboxError


@pytest.fixture
def sandbox() -> Iterator[Sandbox]:
    with Sandbox() as box:
        yield box


def test_the_project_is_seeded_and_removed_on_exit() -> None:
    with Sandbox() as box:
        root = box.root
        assert {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()} == set(
            SEED_FILES
        )
    assert not root.exists()


@pytest.mark.parametrize(
    "path", ["/etc/passwd", "../outside.txt", "src/../../outside.txt", "~/x", "", "a\0b"]
)
def test_paths_that_leave_the_sandbox_are_refused(sandbox: Sandbox, path: str) -> None:
    with pytest.raises(SandboxError):
        sandbox.write(path, "x")
    with pytest.raises(SandboxError):
        sandbox.read(path)
    assert not (sandbox.root.parent / "outside.txt").exists()


def test_a_symbolic_link_out_of_the_sandbox_is_refused(sandbox: Sandbox, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("secret")
    os.symlink(tmp_path, sandbox.root / "link")
    with pytest.raises(SandboxError):
        sandbox.read("link/secret.txt")
    with pytest.raises(SandboxError):
        sandbox.write("link/secret.txt", "changed")
    assert secret.read_text() == "secret"
    assert sandbox.search("secret") == "no line contains 'secret'"


def test_each_tool_works_inside(sandbox: Sandbox) -> None:
    assert sandbox.run_tool("write", {"path": "a/b.txt", "content": "one\ntwo\n"}) == (
        "wrote 8 bytes to a/b.txt"
    )
    assert sandbox.run_tool("read", {"path": "a/b.txt"}) == "one\ntwo\n"
    assert sandbox.run_tool("edit", {"path": "a/b.txt", "old": "two", "new": "2"}).startswith(
        "replaced 1"
    )
    assert sandbox.read("a/b.txt") == "one\n2\n"
    assert sandbox.run_tool("search", {"pattern": "TODO"}) == (
        "src/main.py:2: # TODO: parse the arguments\nsrc/util.py:1: # TODO: add tests"
    )
    assert sandbox.run_tool("run", {"command": "ls src"}) == "src/main.py\nsrc/util.py"
    assert sandbox.run_tool("run", {"command": "cat notes.txt"}) == SEED_FILES["notes.txt"]
    # Results never show where the sandbox really is: a recorded run replays anywhere.
    assert str(sandbox.root) not in sandbox.run_tool("run", {"command": "pwd"})


@pytest.mark.parametrize(
    "command",
    ["rm -rf /", "python -c 'import os'", "cat /etc/passwd", "ls ..", "bash -c ls", "cat 'open"],
)
def test_run_refuses_anything_but_its_read_only_commands(sandbox: Sandbox, command: str) -> None:
    with pytest.raises(SandboxError):
        sandbox.run(command)


def test_run_starts_no_process(sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("run started a process")

    monkeypatch.setattr(subprocess, "Popen", refuse)
    monkeypatch.setattr(os, "system", refuse)
    for command in ("ls", "cat config.ini", "head notes.txt", "wc notes.txt", "echo hi", "pwd"):
        sandbox.run(command)


def test_edit_needs_exactly_one_occurrence(sandbox: Sandbox) -> None:
    with pytest.raises(SandboxError, match="does not occur"):
        sandbox.edit("config.ini", "debug = maybe", "x")
    sandbox.write("twice.txt", "a a")
    with pytest.raises(SandboxError, match="occurs 2 times"):
        sandbox.edit("twice.txt", "a", "b")


def test_the_tools_are_the_five_documented_ones() -> None:
    assert [tool["function"]["name"] for tool in TOOLS] == [
        "write", "read", "edit", "search", "run",
    ]  # fmt: skip
