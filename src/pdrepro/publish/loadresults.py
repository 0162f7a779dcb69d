"""Writes a load sweep's results: RUN/load-summary.json, RUN/report.md and RUN/plots/load.png. Only `pdrepro
load` (at its end) and `pdrepro analyze` call it; `pdrepro check` judges the same analysis in memory and writes
nothing. Like a sweep's summary, what is written names the run's files relative to the run (``portable``)."""

from __future__ import annotations

from pathlib import Path

from ..analysis.load import compute_load_summary
from ..report.load import PLOT, plot, render
from ..rundir import RunDir
from ..rundir.contract import dumps_json, unwritable, write_atomic
from ..rundir.loadsummary import FILE, LoadSummary
from ..rundir.portable import portable
from ..scenario.model import Scenario


def summary_path(run: RunDir) -> Path:
    return run.root / FILE


def write_load_results(run: RunDir, scenario: Scenario) -> LoadSummary:
    summary = compute_load_summary(run, scenario)
    data = portable(summary.model_dump(mode="json"), run.root)
    path = summary_path(run)
    write_atomic(path, dumps_json(data, path, indent=2), run.root)
    written = LoadSummary.model_validate(data)
    try:
        run.plots_dir.mkdir(parents=True, exist_ok=True)
        drawn = plot(written, run.plots_dir / PLOT)
    except OSError as exc:
        raise unwritable(Path(exc.filename or run.plots_dir), exc, run.root) from None
    write_atomic(run.report_file, render(written, drawn), run.root)
    return summary
