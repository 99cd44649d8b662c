"""The framework matrix (issue 30): twelve agent stacks, each fault, direct and through toolwire.

Run: ``.venv/bin/python bench/framework_matrix.py [--stacks a,b] [--write] [--json FILE]``
(needs the frameworks' virtualenvs, ``.venv-frameworks`` and ``.venv-frameworks-openai2``, made
as ``.ci/run`` makes them).

It starts the scripted upstream (``tests/frameworks/upstream.py``) and ``toolwire serve
--provider llama-server`` in front of it, runs every stack of ``tests/frameworks/matrix.py`` on
every fault, whole and streamed, directly, through the proxy and (where the framework takes an
httpx client) through ``HealingTransport``, and prints the matrix. ``--write`` puts it into
``docs/frameworks.md`` between its markers; ``tests/frameworks/test_frameworks.py`` measures it
again and fails when the doc says something else.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from frameworks.matrix import BY_KEY, STACKS, measure, outcome, render, running_routes, write_doc


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stacks", help="comma-separated keys (default: every stack)")
    parser.add_argument("--write", action="store_true", help="write docs/frameworks.md")
    parser.add_argument("--json", type=Path, help="also write every result to this file")
    args = parser.parse_args()
    stacks = [BY_KEY[key] for key in args.stacks.split(",")] if args.stacks else list(STACKS)
    started = time.monotonic()
    with running_routes() as (routes, upstream):
        measured = measure(stacks, routes, upstream)
    print(render(measured))
    bad = [
        (key, route, result["fault"], result["streamed"])
        for key, row in measured.items()
        for route in ("proxy", "transport")
        for result in row.get(route, ())
        if outcome(result) == "BAD ARGS"
    ]
    print(
        f"{len(stacks)} stacks in {time.monotonic() - started:.0f} s; "
        f"bad calls run through toolwire: {bad or 'none'}"
    )
    if args.json:
        args.json.write_text(json.dumps(measured, indent=1), encoding="utf-8")
    if args.write:
        if len(stacks) != len(STACKS):
            parser.error("--write needs every stack")
        write_doc(measured)


if __name__ == "__main__":
    main()
