"""Writes a run's results where people and the gates find them: summary.json, report.md,
summary.csv and the plots. The analysis only computes; this is the step after it, and the
command layer (analyze, check, sweep) is what calls it."""

from __future__ import annotations

from pathlib import Path

from ..analysis.comparison import compute_comparison, render_comparison
from ..analysis.summarize import compute_summary
from ..core.errors import UserError
from ..report.markdown import render_csv, render_report
from ..report.plots import render_plots
from ..rundir import RunDir, why_absent
from ..rundir.contract import stamp, unwritable, write_atomic
from ..scenario.model import ComparisonScenario, Scenario


def write_outputs(run: RunDir, summary: dict) -> list[Path]:
    """summary.json, report.md and the plots; returns the plot paths."""
    run.write_summary(summary)
    write_atomic(run.report_file, render_report(summary), run.root)
    write_atomic(run.summary_csv, render_csv(summary), run.root)
    try:
        return render_plots(summary, run.plots_dir)
    except OSError as exc:
        raise unwritable(Path(exc.filename or run.plots_dir), exc, run.root) from None


def analyze_run(run: RunDir, scenario: Scenario) -> dict:
    """Parse and compute a run, write summary.json, report.md and plots; return the summary."""
    if isinstance(scenario, ComparisonScenario):
        signature = run.inputs_signature() if run.root.is_dir() else None
        summary = compute_comparison(run, scenario)
        if signature is not None:
            stamp(summary, signature)
        run.write_summary(summary, sort_keys=True)
        write_atomic(run.report_file, render_comparison(summary))
        return summary
    if not run.root.is_dir():
        why = why_absent(run.root, "directory").replace("missing", "no such run directory")
        raise UserError(f"{run.root}: {why}; give the folder holding bench/ and logs/")
    for folder in (run.bench_dir, run.logs_dir):
        if folder.exists() and not folder.is_dir():
            raise UserError(f"{folder}: {why_absent(folder, 'directory')}; the run keeps its bench results and logs in "
                            "folders of these names: move the file away")
    if not run.bench_dir.is_dir() and not run.logs_dir.is_dir():
        raise UserError(f"{run.root}: has neither bench/ nor logs/; is this a run directory?")
    # Taken before reading, so an input that changes meanwhile makes the summary stale.
    signature = run.inputs_signature()
    summary = stamp(compute_summary(run, scenario), signature)
    write_outputs(run, summary)
    return summary
