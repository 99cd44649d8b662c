"""The healing comparison's report: one table, one sentence per figure, and its JSON.

Every figure is counted from the runs themselves (:class:`~.through_proxy.ModeResult`); the
sentences say what was measured, not more: the shares are of the turns and tasks this suite
ran, against this model, at these budgets.
"""

from __future__ import annotations

from typing import Any

import msgspec
from rich.console import Console
from rich.table import Table

from .through_proxy import HealingComparison, ModeResult

__all__ = ["comparison_report", "print_comparison"]


def _share(part: int, whole: int) -> str:
    return f"{part}/{whole} ({100 * part / whole:.0f}%)" if whole else "0/0"


def comparison_report(comparison: HealingComparison) -> dict[str, Any]:
    """The comparison as JSON-ready data, with the added requests and tokens."""
    data: dict[str, Any] = msgspec.to_builtins(comparison)
    off, on = comparison.off, comparison.on
    data["added"] = {
        "upstream_requests": on.upstream.requests - off.upstream.requests,
        "request_bytes": on.upstream.request_bytes - off.upstream.request_bytes,
        "generated_tokens": on.upstream.generated_tokens - off.upstream.generated_tokens,
        "prompt_tokens": on.upstream.prompt_tokens - off.upstream.prompt_tokens,
    }
    for key, mode in (("off", off), ("on", on)):
        data[key]["broken_turn_share"] = mode.broken_turns / mode.turns if mode.turns else 0.0
        data[key]["completed_share"] = mode.tasks_completed / mode.tasks if mode.tasks else 0.0
    return data


def _row(name: str, mode: ModeResult) -> list[str]:
    return [
        name,
        _share(mode.broken_turns, mode.turns),
        _share(mode.tasks_completed, mode.tasks),
        str(mode.upstream.requests),
        f"{mode.upstream.request_bytes / 1000:.0f}",
        str(mode.upstream.generated_tokens),
    ]


def print_comparison(console: Console, comparison: HealingComparison) -> None:
    """The table, then what it means."""
    table = Table(title="the plain agent through toolwire serve, healing off and on")
    for column in (
        "healing",
        "turns with a broken call",
        "tasks completed",
        "model requests",
        "KB sent to the model",
        "tokens generated",
    ):
        table.add_column(column, justify="left" if column == "healing" else "right")
    table.add_row(*_row("off", comparison.off))
    table.add_row(*_row("on", comparison.on))
    console.print(table)
    off, on = comparison.off, comparison.on
    console.print(
        f"With healing off the agent received a broken call in "
        f"{_share(off.broken_turns, off.turns)} of its turns; with healing on in "
        f"{_share(on.broken_turns, on.turns)}. Tasks completed: "
        f"{off.tasks_completed} → {on.tasks_completed} of {on.tasks}. Healing cost "
        f"{on.upstream.requests - off.upstream.requests:+d} model requests, "
        f"{(on.upstream.request_bytes - off.upstream.request_bytes) / 1000:+.0f} KB of "
        f"requests and {on.upstream.generated_tokens - off.upstream.generated_tokens:+d} "
        f"generated tokens (at most {comparison.max_retries} retries per request)."
    )
    if not (off.upstream.usage_reported or on.upstream.usage_reported):
        console.print(
            "The server reported no usage in its streams: tokens generated are the streamed "
            "pieces that carried text or arguments (one per token on llama-cpp-python)."
        )
