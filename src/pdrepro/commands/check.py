"""``pdrepro check RUN``: one line per threshold; exit 0 only when all pass."""

from __future__ import annotations

import sys
from pathlib import Path

from tabulate import tabulate

from ..core.errors import UserError
from ..core.exits import EXIT_FAILED
from ..publish.verdictsource import judged_summary
from ..report.markdown import ceiling_lines
from ..rundir import RunDir, loadstate
from ..rundir.issuekind import IssueKind
from ..scenario.model import resolve_scenario
from ..scenario.recorded import own_scenario
from ..verdicts.bounds import bound_changes
from ..verdicts.gates import evaluate, failed, not_applicable


def register(subparsers) -> None:
    p = subparsers.add_parser("check", help="judge a run against the scenario's thresholds (exit 1 on a failure)",
                              description="Analyse RUN's raw inputs afresh, in memory (nothing in RUN is written; "
                                          "a stale RUN/summary.json is named, and `pdrepro analyze` rewrites it), then "
                                          "evaluate the thresholds and impossible figures. Exit 0: all pass; 1: a check "
                                          "failed; 2: bad input.")
    p.add_argument("run", type=Path, help="run directory")
    p.add_argument("--scenario", help="shipped scenario name or YAML path (default: RUN/scenario.yaml)")
    p.add_argument("--thresholds", help="YAML file of thresholds laid over the scenario's "
                                        "(keys it names win; per-length bounds merge by length)")
    p.set_defaults(func=run)


def _fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "—"
    return f"{value:.2f} {unit}".rstrip()


def run(args) -> int:
    run_dir = RunDir(args.run)
    if loadstate.present(run_dir.root):
        from .load import check_load  # a load sweep's run: its own gates, per step

        return check_load(run_dir, args)
    scenario = resolve_scenario(args.scenario, args.run, args.thresholds)
    own = own_scenario(run_dir) if run_dir.root.is_dir() else None
    judged = judged_summary(run_dir, scenario)
    summary = judged.summary
    results = evaluate(summary, scenario)
    table = [[r.name, "all" if r.prompt_len is None else str(r.prompt_len), _fmt(r.figure, r.unit),
              "" if r.bound is None else f"{r.op} {r.bound:g} {r.unit}".rstrip(), r.verdict]
             for r in results]
    print(tabulate(table, headers=["check", "length", "figure", "bound", "verdict"], tablefmt="simple",
                   disable_numparse=True))
    bad, idle = failed(results), not_applicable(results)
    print()
    for r in bad:
        print(f"FAIL {r.detail}")
    for r in idle:
        print(f"N/A  {r.detail}")
    for i in summary.issues:
        if i.kind == IssueKind.PINS_DIFFER and scenario.pins_match == "warn":
            print(f"WARN {i.message} (the scenario's pins_match: warn)")
    for line in ceiling_lines(summary):
        print(f"engine ceiling: {line}")
    for i in summary.issues:
        if i.severity == "warning":  # they bear on what the figures mean
            print(f"WARN {i.message}")
    for note in judged.notes:
        print(f"NOTE {note}")
    if own is not None and (args.scenario is not None or args.thresholds is not None):
        # Judged by other bounds than the run's own, as asked: say which.
        for line in bound_changes(own, scenario):
            print(f"BOUND {line}")
    passed = len(results) - len(bad) - len(idle)
    print(f"{passed} passed, {len(bad)} failed" + (f", {len(idle)} not applicable" if idle else ""), file=sys.stderr)
    errors = summary.input_errors()
    if errors:
        raise UserError(errors[0].message)
    return EXIT_FAILED if bad else 0
