"""``toolwire demo``, one module per job, behind the ``[demo]`` extra (rich, matplotlib).

Only this file loads with the ``toolwire`` command: it registers ``demo`` and, when the demo
runs, checks the extra and imports the rest. ``replay``, ``check`` and ``serve`` never import
the demo, so they work without rich or matplotlib.

- ``command``: the sub-command, its options and exit codes;
- ``model_file``: where the ``[local]`` extra put the server and the model file;
- ``server``: starting and always stopping a local server; ``server_kinds``: the two kinds,
  llama-cpp-python's and llama.cpp's ``llama-server`` (``llama_server``: its binary, template
  and flags), as data;
- ``sandbox``: the tools, confined to a temporary folder;
- ``tasks``: the fixed suite;
- ``agent``: the agent loop, one ``toolwire.Pipeline`` per run;
- ``transport``: a live server, or a recording of one;
- ``plain``: what a plain ``json.loads`` loop would do with the same calls;
- ``report``, ``render``, ``plot``: the figures, the tables, the picture.
"""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["EXTRA_MISSING", "add_demo_parser"]

#: The one line (exit code 1) when the demo runs without its extra.
EXTRA_MISSING = (
    "toolwire demo needs the [demo] extra (rich draws its tables): pip install 'toolwire[demo]'"
)


def add_demo_parser(commands: Any) -> None:
    """Register ``demo``; its options are parsed by :mod:`.command` when it runs."""
    demo = commands.add_parser(
        "demo",
        add_help=False,  # `toolwire demo --help` is the demo's own parser's
        help="run a real small model through an agent loop and show what toolwire caught "
        "(the [demo] extra)",
    )
    demo.set_defaults(handler=_run, parses_its_own_options=True)


def _run(args: argparse.Namespace) -> int:
    from ..common import fail

    try:
        import rich  # noqa: F401
    except ImportError:
        fail(EXTRA_MISSING, 1)
    from .command import run_demo

    return run_demo(args.rest)
