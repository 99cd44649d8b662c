"""The fault table of ``docs/healing.md``, measured: each fault of the network, each format.

For each of the five healed formats (Chat, Anthropic, Responses, Gemini, Ollama), streamed and
whole, and each fault (``tests/heal/faults.py``: a drop once, a drop every time, a reset, a
stall, bytes that break HTTP, HTTP 500 on the retry), one request goes through a
``toolwire.HealingTransport`` to a loopback upstream that fails so. Printed as a Markdown table:
what the client saw, the upstream requests made, the seconds it took (median of ``--runs``).
``--read-timeout`` is the client's read timeout (what ends a stall).

    PYTHONPATH=<pkg> python bench/bench_fault_table.py --read-timeout 1 --runs 3
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from heal.faults import FAULTS, FORMATS, Outcome, run_case

#: How each fault is named in the table.
NAMES = {
    "drop_once": "drop (once)",
    "drop": "drop (every time)",
    "reset": "reset (every time)",
    "stall": "stall",
    "garbage": "garbage (HTTP framing)",
    "retry_5xx": "5xx on the retry",
}


async def measure(read_timeout: float, runs: int) -> list[str]:
    rows = [
        "| fault | format | streamed: the client sees | requests | seconds "
        "| whole: the client sees | requests | seconds |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for fault in FAULTS:
        for name, case in FORMATS.items():
            cells = [NAMES[fault], name]
            for streamed in (True, False):
                outcomes: list[Outcome] = [
                    await run_case(case, fault, streamed, read_timeout=read_timeout)
                    for _ in range(runs)
                ]
                seconds = statistics.median(outcome.seconds for outcome in outcomes)
                last = outcomes[-1]
                cells += [last.seen(), str(last.requests), f"{seconds:.2f}"]
            rows.append("| " + " | ".join(cells) + " |")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--read-timeout", type=float, default=1.0)
    parser.add_argument("--runs", type=int, default=3)
    options = parser.parse_args()
    rows = anyio.run(measure, options.read_timeout, options.runs)
    print("\n".join(rows))


if __name__ == "__main__":
    main()
