"""The table `check` prints for a run made of members (a load's steps, a fault run's faults): one row per check,
the member it belongs to in a column of its own. Each kind says how it shows a figure (a load's against its bound,
so rounding never crosses it; a fault run's as its recorded consoles show them)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tabulate import tabulate

from ..verdicts.result import CheckResult


def check_table(per: Sequence[tuple[str, CheckResult]], column: str, figure: Callable[[float, CheckResult], str]) -> str:
    rows = [[r.name, where, "—" if r.figure is None else f"{figure(r.figure, r)} {r.unit}".rstrip(),
             "" if r.bound is None else f"{r.op} {r.bound:g} {r.unit}".rstrip(), r.verdict] for where, r in per]
    return tabulate(rows, headers=["check", column, "figure", "bound", "verdict"], tablefmt="simple",
                    disable_numparse=True)
