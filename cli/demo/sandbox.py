"""The demo's tools (write, read, edit, search, run), confined to one temporary folder.

Every path is resolved inside the sandbox and refused when it would leave it (an absolute path,
``..``, a symbolic link pointing out). ``run`` starts no process: it understands a fixed set of
read-only commands (``ls``, ``cat``, ``head``, ``wc``, ``pwd``, ``echo``) and carries them out
itself, over the sandbox, so a model's command can never reach the machine. A tool that is
given a bad path or command raises, and ``toolwire.dispatch`` turns that into an error result
the model reads; tool results never contain the sandbox's real location, so a recorded run
replays to the same requests on any machine.
"""

from __future__ import annotations

import shlex
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["SEED_FILES", "TOOLS", "Sandbox", "SandboxError"]


def _tool(name: str, description: str, properties: dict[str, Any], required: list[str]) -> Any:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": False,
            },
        },
    }


_STRING = {"type": "string"}

#: The five tools, in the OpenAI ``tools`` format: what the model is offered and judged against.
TOOLS: list[Any] = [
    _tool(
        "write",
        "Create or overwrite a file with the given content.",
        {"path": _STRING, "content": _STRING},
        ["path", "content"],
    ),
    _tool("read", "Read a whole file.", {"path": _STRING}, ["path"]),
    _tool(
        "edit",
        "Replace the one occurrence of `old` with `new` in a file.",
        {"path": _STRING, "old": _STRING, "new": _STRING},
        ["path", "old", "new"],
    ),
    _tool(
        "search",
        "Find the lines that contain a text, in every file of the project.",
        {"pattern": _STRING},
        ["pattern"],
    ),
    _tool(
        "run",
        "Run a read-only shell command in the project folder: ls, cat, head, wc, pwd or echo.",
        {"command": _STRING},
        ["command"],
    ),
]

#: The project every run starts from.
SEED_FILES: dict[str, str] = {
    "notes.txt": "Buy milk\nCall Alice about the release\n",
    "config.ini": "[app]\ndebug = false\nport = 8080\n",
    "src/main.py": "def main():\n    # TODO: parse the arguments\n    print('hello')\n",
    "src/util.py": "# TODO: add tests\ndef add(a, b):\n    return a + b\n",
}

#: Largest file a tool reads or writes, and largest output it returns.
_MAX_BYTES = 64 * 1024
_RUN_COMMANDS = ("ls", "cat", "head", "wc", "pwd", "echo")


class SandboxError(Exception):
    """A tool was asked for something outside the sandbox or beyond its commands."""


class Sandbox:
    """A fresh temporary project folder; use as a context manager (removed on exit)."""

    def __init__(self) -> None:
        self._folder = tempfile.TemporaryDirectory(prefix="toolwire-demo-")
        self.root = Path(self._folder.name).resolve()
        for name, text in SEED_FILES.items():
            target = self.root / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Remove the folder and everything the tools wrote."""
        self._folder.cleanup()

    # -- paths -------------------------------------------------------------------------------

    def path(self, name: str) -> Path:
        """``name`` resolved inside the sandbox; :class:`SandboxError` when it would leave it."""
        if not name or "\0" in name:
            raise SandboxError("give a file path relative to the project folder")
        if Path(name).is_absolute() or name.startswith("~"):
            raise SandboxError(f"{name!r} is not inside the project folder: use a relative path")
        target = (self.root / name).resolve()
        if not target.is_relative_to(self.root):
            raise SandboxError(f"{name!r} is not inside the project folder")
        return target

    def _shown(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix() or "."

    def _files(self) -> list[Path]:
        return sorted(
            path
            for path in self.root.rglob("*")
            if path.is_file() and not path.is_symlink() and path.resolve().is_relative_to(self.root)
        )

    def _read_text(self, path: Path) -> str:
        if not path.is_file():
            raise SandboxError(f"no file {self._shown(path)!r}")
        if path.stat().st_size > _MAX_BYTES:
            raise SandboxError(f"{self._shown(path)!r} is larger than {_MAX_BYTES} bytes")
        return path.read_text(encoding="utf-8", errors="replace")

    # -- the tools ---------------------------------------------------------------------------

    def run_tool(self, name: str, arguments: dict[str, Any]) -> str:
        """Run one judged call: ``arguments`` passed the tool's schema."""
        if name == "write":
            return self.write(arguments["path"], arguments["content"])
        if name == "read":
            return self.read(arguments["path"])
        if name == "edit":
            return self.edit(arguments["path"], arguments["old"], arguments["new"])
        if name == "search":
            return self.search(arguments["pattern"])
        if name == "run":
            return self.run(arguments["command"])
        raise SandboxError(f"no tool named {name!r}")

    def write(self, name: str, content: str) -> str:
        """Create or overwrite a file."""
        data = content.encode("utf-8")
        if len(data) > _MAX_BYTES:
            raise SandboxError(f"content is larger than {_MAX_BYTES} bytes")
        target = self.path(name)
        if target.is_dir():
            raise SandboxError(f"{self._shown(target)!r} is a folder")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        return f"wrote {len(data)} bytes to {self._shown(target)}"

    def read(self, name: str) -> str:
        """The text of a file."""
        return self._read_text(self.path(name))

    def edit(self, name: str, old: str, new: str) -> str:
        """Replace the one occurrence of ``old``."""
        target = self.path(name)
        text = self._read_text(target)
        if not old:
            raise SandboxError("`old` is empty: give the exact text to replace")
        count = text.count(old)
        if count != 1:
            found = "does not occur" if count == 0 else f"occurs {count} times"
            raise SandboxError(f"{old!r} {found} in {self._shown(target)}; it must occur once")
        target.write_text(text.replace(old, new), encoding="utf-8")
        return f"replaced 1 occurrence in {self._shown(target)}"

    def search(self, pattern: str) -> str:
        """``file:line: text`` for every line that contains ``pattern``."""
        if not pattern:
            raise SandboxError("`pattern` is empty")
        hits = []
        for path in self._files():
            lines = self._read_text(path).splitlines()
            for number, line in enumerate(lines, 1):
                if pattern in line:
                    hits.append(f"{self._shown(path)}:{number}: {line.strip()}")
        return "\n".join(hits) if hits else f"no line contains {pattern!r}"

    def run(self, command: str) -> str:
        """One read-only command, carried out here (no process is started)."""
        try:
            words = shlex.split(command)
        except ValueError as error:
            raise SandboxError(f"cannot read the command: {error}") from None
        if not words or words[0] not in _RUN_COMMANDS:
            raise SandboxError(
                f"command not allowed: {command[:60]!r}; only {', '.join(_RUN_COMMANDS)}"
            )
        program, arguments = words[0], [word for word in words[1:] if not word.startswith("-")]
        if program == "pwd":
            return "."
        if program == "echo":
            return " ".join(words[1:])
        if program == "ls":
            folder = self.path(arguments[0]) if arguments else self.root
            if not folder.is_dir():
                raise SandboxError(f"no folder {arguments[0]!r}")
            return "\n".join(
                self._shown(entry) + ("/" if entry.is_dir() else "")
                for entry in sorted(folder.iterdir())
            )
        if not arguments:
            raise SandboxError(f"{program} needs a file name")
        outputs = []
        for name in arguments:
            text = self.read(name)
            if program == "cat":
                outputs.append(text)
            elif program == "head":
                outputs.append("\n".join(text.splitlines()[:10]))
            else:  # wc
                outputs.append(f"{len(text.splitlines())} {len(text.split())} {len(text)} {name}")
        return "\n".join(outputs)[:_MAX_BYTES]
