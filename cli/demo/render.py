"""What the demo shows: a progress bar per task and a live table while it runs, then the report.

Written with ``rich``. On a terminal the display updates after every turn; when the output is
not a terminal (CI, a pipe), only the final tables are written, once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Console, Group
from rich.live import Live
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn
from rich.table import Table

from .agent import RunOutcome, TurnOutcome
from .report import summarize

__all__ = ["LiveView", "print_report"]


class LiveView:
    """The display while the demo runs; use as a context manager, feed it every turn."""

    def __init__(self, console: Console, tasks: Sequence[str], budgets: Sequence[int]) -> None:
        self.console = console
        self.budgets = list(budgets)
        self.runs: dict[str, RunOutcome] = {}
        self.progress = Progress(
            TextColumn("{task.description:<14}"),
            BarColumn(bar_width=24),
            MofNCompleteColumn(),
            TextColumn("{task.fields[last]}"),
            console=console,
        )
        self._bars: dict[str, TaskID] = {
            name: self.progress.add_task(name, total=len(self.budgets), last="") for name in tasks
        }
        self._live = Live(self._render(), console=console, refresh_per_second=8, transient=True)

    def __enter__(self) -> LiveView:
        if self.console.is_terminal:
            self._live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.console.is_terminal:
            self._live.__exit__(None, None, None)

    def turn_done(self, run: RunOutcome, turn: TurnOutcome) -> None:
        """A turn of ``run`` ended: update its task's bar and the table."""
        self.runs[run.name] = run
        outcomes = ", ".join(
            f"{call.name} {call.outcome}" for call in run.calls if call.turn == turn.turn
        )
        last = f"@{run.budget} turn {turn.turn}: {outcomes or turn.stop_reason}"
        self.progress.update(self._bars[run.task], last=last)
        self._refresh()

    def run_done(self, run: RunOutcome) -> None:
        """A run ended: its task's bar moves one budget on."""
        self.runs[run.name] = run
        self.progress.update(self._bars[run.task], advance=1, last=f"@{run.budget}: {run.stop}")
        self._refresh()

    def _refresh(self) -> None:
        if self.console.is_terminal:
            self._live.update(self._render())

    def _render(self) -> Group:
        return Group(self.progress, budget_table(list(self.runs.values()), self.budgets))


def budget_table(runs: Sequence[RunOutcome], budgets: Sequence[int]) -> Table:
    """Calls by outcome per budget, with truncations and the plain loop's crashes beside them."""
    table = Table(title="calls per max_tokens budget", title_justify="left")
    for header in (
        "max_tokens", "calls", "ok", "repaired", "rejected", "cut turns",
        "plain loop: crashed turns", "plain loop: bad runs",
    ):  # fmt: skip
        table.add_column(header, justify="right")
    for budget in budgets:
        mine = [run for run in runs if run.budget == budget]
        calls = [call for run in mine for call in run.calls]
        turns = [turn for run in mine for turn in run.turns]
        count = {o: sum(c.outcome == o for c in calls) for o in ("ok", "repaired", "rejected")}
        table.add_row(
            str(budget),
            str(len(calls)),
            str(count["ok"]),
            str(count["repaired"]),
            str(count["rejected"]),
            str(sum(turn.truncated for turn in turns)),
            str(sum(turn.plain_crashed for turn in turns)),
            str(sum(call.plain.action == "ran_bad" for call in calls)),
        )
    return table


def _counts_table(title: str, counts: dict[str, int], what: str) -> Table:
    table = Table(title=title, title_justify="left")
    table.add_column(what)
    table.add_column("count", justify="right")
    for name, count in counts.items():
        table.add_row(name, str(count))
    if not counts:
        table.add_row("(none)", "0")
    return table


def print_report(
    console: Console, runs: Sequence[RunOutcome], budgets: Sequence[int], report: dict[str, Any]
) -> None:
    """The final tables and the sentences that sum them up."""
    summary = summarize(runs)
    console.print(budget_table(runs, budgets))
    console.print(_counts_table("repairs by kind", summary["repairs_by_kind"], "repair"))
    console.print(_counts_table("rejections by reason", summary["rejections_by_reason"], "reason"))
    cut = summary["truncations"]
    console.print(
        _counts_table(
            f"truncated turns: {cut['turns']} ({cut['calls']} calls cut), by evidence",
            cut["by_evidence"],
            "evidence",
        )
    )
    plain = summary["plain_loop"]
    actions = plain["calls_by_action"]
    outcome = summary["by_outcome"]
    console.print(
        f"[bold]toolwire[/bold]: {summary['calls']} calls in {summary['turns']} turns of "
        f"{summary['runs']} runs: {outcome['ok']} ok, {outcome['repaired']} repaired, "
        f"{outcome['rejected']} rejected with a message the model read; "
        f"{summary['executed']} ran, none with bad arguments."
    )
    console.print(
        f"[bold]a plain loop[/bold] ({plain['rule']}): {plain['crashed_turns']} turns crash it; "
        f"{actions['ran_bad']} tools run with made-up or partial arguments; "
        f"{actions['ran_same']} calls run as toolwire ran them; "
        f"{actions['not_reached']} are never reached."
    )
    ended = ", ".join(f"{reason} {count}" for reason, count in summary["runs_by_stop"].items())
    console.print(f"runs ended: {ended}")
    if report.get("mode") == "replay":
        console.print("(replayed from a recording of real runs: no model was started)")
