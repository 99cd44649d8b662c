"""The demo is the ``[demo]`` extra: without rich and matplotlib, ``replay``, ``check`` and
``serve`` work and import nothing of the demo; ``toolwire demo`` says in one line what to install.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from toolwire.cli.demo import EXTRA_MISSING

#: Runs ``toolwire ARGS`` with rich and matplotlib unimportable, then names what got imported
#: of them and of the demo's modules.
WITHOUT_THE_EXTRA = """
import importlib.abc, sys

class NotInstalled(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in ("rich", "matplotlib"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NotInstalled())
from toolwire.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as exit_:
    code = exit_.code
loaded = sorted(
    name for name in sys.modules
    if name.partition(".")[0] in ("rich", "matplotlib") or name.startswith("toolwire.cli.demo.")
)
sys.stderr.write(f"loaded: {loaded}\\n")
raise SystemExit(code)
"""


def without_the_extra(*argv: str, stdin: str = "") -> tuple[int, str, list[str]]:
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_THE_EXTRA, *argv],
        input=stdin, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    *lines, last = done.stderr.splitlines()
    assert last.startswith("loaded: "), done.stderr
    return done.returncode, done.stdout, [*lines, last]


@pytest.mark.parametrize(
    ("argv", "stdin", "says"),
    [
        (["replay", "bundled:llama_cpp_write_cut_at_max_tokens", "--json"], "", '"calls"'),
        (["check", "--tool", "write"], '{"path": "a.txt",}', '"outcome"'),
        (["serve", "--help"], "", "toolwire serve"),
        (["--help"], "", "demo"),
    ],
)
def test_replay_check_and_serve_need_no_rich_nor_matplotlib(
    argv: list[str], stdin: str, says: str
) -> None:
    code, out, err = without_the_extra(*argv, stdin=stdin)
    assert code == 0, err
    assert says in out
    assert err[-1] == "loaded: []"


@pytest.mark.parametrize("argv", [["demo"], ["demo", "--replay"], ["demo", "--help"]])
def test_the_demo_without_its_extra_is_one_line_and_exit_1(argv: list[str]) -> None:
    code, out, err = without_the_extra(*argv)
    assert (code, out) == (1, "")
    assert err[:-1] == [f"toolwire: {EXTRA_MISSING}"]
    assert "pip install 'toolwire[demo]'" in EXTRA_MISSING
