"""A sweep's run (`pdrepro sweep`, and each arm, setting or configuration a composite kind runs): bench/, logs/ and
counters/ analysed again in memory; its provenance.json records no kind (the sweep sets none)."""

from __future__ import annotations

from typing import Any

from ..analysis.verdictsource import Judged, judged_sweep
from ..core import advice
from ..core.errors import UserError
from ..publish.results import analyze_sweep
from ..rundir import RunDir
from ..rundir.summarymodel import Summary
from ..scenario.model import Scenario
from . import recorded
from .summarykind import SummaryKind

# Files only `pdrepro sweep` (or a copy of its run) leaves in a run directory: a smoke writes none of them.
SWEEP_MARKS = ("bench", "counters", "sweep-state.json")
COMPARISON = "comparison"  # a scenario's kind that sets configurations side by side (the compare kind's)


def sweep_marks(run: RunDir) -> list[str]:
    return [name for name in SWEEP_MARKS if (run.root / name).exists()]


def refuse_comparison_scenario(run: RunDir, scenario: Scenario, what: str) -> None:
    """A folder that records one run is not judged as a comparison of configurations."""
    if scenario.kind == COMPARISON:
        raise UserError(f"{run.root}: holds {what}, but the scenario {scenario.name} is a comparison (its configurations "
                        "are folders of their own); judge it with the run's own scenario, or give the comparison's folder")


class Sweep(SummaryKind):
    name = "sweep"
    summary_model = Summary

    def records(self, run: RunDir) -> bool:
        return bool(sweep_marks(run)) or run.logs_dir.is_dir() or recorded.summary_value(run, "source") == "sglang"

    def judged(self, run: RunDir, scenario: Scenario) -> Judged:
        stored_kind = recorded.summary_value(run, "kind")
        if scenario.kind == COMPARISON and stored_kind != COMPARISON and run.summary_file.is_file():
            raise UserError(f"{run.summary_file}: is a sglang run's summary, but the run's scenario {scenario.name} is "
                            f"a {scenario.kind} run; it is not this run's: delete it and run `{advice.analyze(run.root)}` "
                            "to make the run's own")
        refuse_comparison_scenario(run, scenario, "a sweep's run")
        return judged_sweep(run, scenario)

    def write(self, run: RunDir, scenario: Scenario) -> dict[str, Any]:
        refuse_comparison_scenario(run, scenario, "a sweep's run")
        return analyze_sweep(run, scenario)
