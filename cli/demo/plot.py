"""``--plot FILE.png``: calls by outcome per budget, and the plain loop beside them.

matplotlib is optional and imported only here, only when asked for; without it the demo says so
in one line before it starts any work (:func:`check_matplotlib`).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

__all__ = ["PlotUnavailable", "check_matplotlib", "draw_outcomes"]


class PlotUnavailable(Exception):
    """matplotlib is not installed."""


def check_matplotlib() -> None:
    """Raise :class:`PlotUnavailable` unless matplotlib can be imported."""
    if importlib.util.find_spec("matplotlib") is None:
        raise PlotUnavailable("--plot needs matplotlib: pip install matplotlib")


def draw_outcomes(report: dict[str, Any], path: Path) -> None:
    """Stacked bars per budget: ok / repaired / rejected, and the plain loop's bad runs."""
    import matplotlib

    matplotlib.use("Agg")  # no display needed
    import matplotlib.pyplot as plt

    by_budget: dict[str, dict[str, int]] = report["summary"]["by_budget"]
    budgets = list(by_budget)
    positions = list(range(len(budgets)))
    ok = [by_budget[b]["ok"] for b in budgets]
    repaired = [by_budget[b]["repaired"] for b in budgets]
    rejected = [by_budget[b]["rejected"] for b in budgets]
    plain_bad = [0 for _ in budgets]
    plain_crash = [0 for _ in budgets]
    for call in report["calls"]:
        at = budgets.index(str(call["budget"]))
        if call["plain"]["action"] == "ran_bad":
            plain_bad[at] += 1
        elif call["plain"]["action"] == "crashed":
            plain_crash[at] += 1
    figure, axes = plt.subplots(figsize=(8, 4.5))
    width = 0.38
    left = [p - width / 2 for p in positions]
    right = [p + width / 2 for p in positions]
    axes.bar(left, ok, width, label="toolwire: ok", color="#2e7d32")
    axes.bar(left, repaired, width, bottom=ok, label="toolwire: repaired", color="#f9a825")
    axes.bar(
        left, rejected, width, bottom=[a + b for a, b in zip(ok, repaired, strict=True)],
        label="toolwire: rejected (never ran)", color="#c62828",
    )  # fmt: skip
    axes.bar(right, plain_crash, width, label="plain loop: crashed", color="#6a1b9a")
    axes.bar(
        right, plain_bad, width, bottom=plain_crash,
        label="plain loop: ran with bad arguments", color="#ef6c00",
    )  # fmt: skip
    axes.set_xticks(positions, budgets)
    axes.set_xlabel("max_tokens")
    axes.set_ylabel("tool calls")
    axes.set_title(f"{report['model']}: tool calls by outcome per budget")
    axes.legend(fontsize="small")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
