"""``pdrepro analyze RUN``: the run's table, summary.json, report.md and plots."""

from __future__ import annotations

import sys
from pathlib import Path

from ..core.errors import UserError
from ..publish.results import analyze_run
from ..report.markdown import measured_table
from ..rundir import RunDir, loadstate
from ..rundir.summarymodel import as_summary
from ..scenario.model import resolve_scenario


def register(subparsers) -> None:
    p = subparsers.add_parser("analyze", help="turn a finished run into the published table, report and plots",
                              description="Parse RUN/bench/*.jsonl and RUN/logs/*.log; write RUN/summary.json, "
                                          "RUN/report.md and RUN/plots/*.png.")
    p.add_argument("run", type=Path, help="run directory (holds bench/ and logs/)")
    p.add_argument("--scenario", help="shipped scenario name or YAML path (default: RUN/scenario.yaml)")
    p.set_defaults(func=run)


def run(args) -> int:
    run_dir = RunDir(args.run)
    scenario = resolve_scenario(args.scenario, args.run)
    if loadstate.present(run_dir.root):  # a load sweep's run: its summary, report and plot
        from ..publish.loadresults import summary_path, write_load_results
        from ..report.load import step_table

        print(step_table(write_load_results(run_dir, scenario)))
        print(f"summary: {summary_path(run_dir)}\nreport:  {run_dir.report_file}")
        return 0
    print(f"analysing {run_dir.root} with scenario {scenario.name} ...", file=sys.stderr)
    summary = as_summary(analyze_run(run_dir, scenario))
    if summary.rows:
        print(measured_table(summary))
        print()
    for i in summary.issues:
        if i.severity != "error":
            print(f"note: {i.message}", file=sys.stderr)
    print(f"summary: {run_dir.summary_file}")
    print(f"report:  {run_dir.report_file}")
    if run_dir.plots_dir.is_dir():
        print(f"plots:   {run_dir.plots_dir}/")
    errors = summary.input_errors()
    if errors:
        more = f" (and {len(errors) - 1} more problem(s): see {run_dir.report_file})" if len(errors) > 1 else ""
        raise UserError(errors[0].message + more)
    return 0
