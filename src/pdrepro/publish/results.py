"""Writes a run's results where people and the gates find them: summary.json, report.md,
summary.csv and the plots. The analysis only computes; this is the step after it, and only
`pdrepro analyze` (and the sweep's own analysis) calls it: the verdicts never write.

What is written names no path of the machine that wrote it: the run folder's own path becomes
a path relative to the run (rundir.portable), so a summary reads the same wherever the run is copied.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..analysis.comparison import compute_comparison, render_comparison
from ..analysis.summarize import compute_summary
from ..core.errors import UserError
from ..report.markdown import render_report
from ..report.plots import render_plots
from ..report.summarycsv import render_csv
from ..rundir import RunDir, why_absent
from ..rundir.contract import stamp, unwritable, write_atomic
from ..rundir.portable import portable
from ..rundir.summarymodel import as_summary
from ..scenario.model import Scenario


def write_outputs(run: RunDir, summary: dict[str, Any]) -> list[Path]:
    """summary.json, report.md and the plots; returns the plot paths."""
    summary = portable(summary, run.root)
    run.write_summary(summary)
    model = as_summary(summary)
    write_atomic(run.report_file, render_report(model), run.root)
    write_atomic(run.summary_csv, render_csv(model), run.root)
    try:
        return render_plots(model, run.plots_dir)
    except OSError as exc:
        raise unwritable(Path(exc.filename or run.plots_dir), exc, run.root) from None


def analyze_comparison(run: RunDir, scenario: Scenario) -> dict[str, Any]:
    """A comparison's summary.json and report.md; returns the summary as computed."""
    signature = run.inputs_signature() if run.root.is_dir() else None
    summary = compute_comparison(run, scenario)
    if signature is not None:
        stamp(summary, signature)
    written = portable(summary, run.root)
    run.write_summary(written, sort_keys=True)
    write_atomic(run.report_file, render_comparison(written))
    return summary


def analyze_sweep(run: RunDir, scenario: Scenario) -> dict[str, Any]:
    """Parse and compute a sweep's run, write summary.json, report.md and plots (naming no path of this machine);
    return the summary as computed (a dict, its messages naming the run's files by the paths given here:
    ``as_summary`` makes it the model a reader reads)."""
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
