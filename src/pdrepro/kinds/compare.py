"""A comparison (`pdrepro compare`): per comparison scenario, a folder RUN/<scenario>/ whose scenario.yaml is of the
kind "comparison", its configurations (1P1D/, 2-regular/) sweeps of their own, judged on completeness and set side
by side (analysis.comparison); the runner's own folder above them records the arms it ran (arms-state.json, its
label opening with "comparison"): with one scenario it is that comparison's folder too, with several it is no run to
check, each comparison folder in it is."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..analysis.comparison import render_comparison
from ..analysis.verdictsource import Judged, judged_comparison
from ..core import advice
from ..core.errors import UserError
from ..publish.results import analyze_comparison, portable
from ..rundir import RunDir
from ..rundir.request import AnalyzeRequest, CheckRequest
from ..rundir.summarymodel import ComparisonSummary
from ..scenario.model import ComparisonScenario, Scenario, resolve_scenario
from ..verdicts.outcome import Verdict, VerdictRecord
from . import recorded
from .summarykind import SummaryKind
from .sweep import COMPARISON


class Compare(SummaryKind):
    name = "compare"
    summary_model = ComparisonSummary

    def records(self, run: RunDir) -> bool:
        return (recorded.scenario_kind(run) == COMPARISON or recorded.summary_value(run, "kind") == COMPARISON
                or recorded.arms_label_head(run) == COMPARISON)

    def for_scenario(self, scenario: Scenario) -> bool:
        return scenario.kind == COMPARISON

    def _refuse_runner_folder(self, run: RunDir) -> None:
        # A runner's folder of one comparison scenario is that comparison (its scenario.yaml says so); one of several
        # holds a comparison folder per scenario and is none itself.
        if recorded.arms_label_head(run) == COMPARISON and recorded.scenario_kind(run) != COMPARISON:
            inside = sorted(p.name for p in run.root.iterdir() if (p / "scenario.yaml").is_file())
            raise UserError(f"{run.root}: the folder `pdrepro compare` ran its arms in, no comparison of its own; "
                            + ("check each comparison in it: " + ", ".join(f"`{advice.check(run.root / name)}`"
                                                                        for name in inside)
                               if inside else "it holds none yet: rerun the `pdrepro compare` that made it to measure "
                               "them"))

    def _refuse_other_scenario(self, run: RunDir, scenario: Scenario) -> None:
        if scenario.kind != COMPARISON:
            raise UserError(f"{run.summary_file}: is a comparison's summary, but the run's scenario {scenario.name} is "
                            f"a {scenario.kind} run; it is not this run's: delete it and run "
                            f"`{advice.analyze(run.root)}` to make the run's own")

    def judged(self, run: RunDir, scenario: Scenario) -> Judged:
        self._refuse_runner_folder(run)
        self._refuse_other_scenario(run, scenario)
        return judged_comparison(run, scenario)

    def write(self, run: RunDir, scenario: Scenario) -> dict[str, Any]:
        self._refuse_runner_folder(run)
        self._refuse_other_scenario(run, scenario)
        return analyze_comparison(run, scenario)

    def verdict(self, run: RunDir, args: CheckRequest) -> Verdict:
        self._refuse_runner_folder(run)
        return super().verdict(run, args)

    def analyze(self, run: RunDir, args: AnalyzeRequest) -> int:
        self._refuse_runner_folder(run)
        return super().analyze(run, args)


def _judged_runs(run: Path) -> list[Path]:
    """The comparison runs in ``run``: itself, or (a run of several scenarios) each RUN/<scenario name>."""
    if (run / "scenario.yaml").is_file():
        return [run]
    found = sorted(p for p in run.iterdir() if not p.is_symlink() and (p / "scenario.yaml").is_file())
    if not found:
        raise UserError(f"--judge {run}: holds no comparison run (no scenario.yaml in it or in a folder of it); give "
                        "the folder `pdrepro compare --out` made")
    return found


def judge_runs(run: Path, verdict_of: Callable[[RunDir, CheckRequest], Verdict]
               ) -> tuple[str, VerdictRecord, list[str], int]:
    """Every comparison run in ``run`` judged as `check` judges it, by the kind each records: the text (each run's
    header, comparison table and checks), one verdict record holding each run's as a member, the input errors, and
    the worst exit status. Nothing is written. ``verdict_of``: the registry's judge (the registry lists this module,
    so it comes from the caller)."""
    texts, members, errors, worst = [], [], [], 0
    for folder in _judged_runs(run):
        scenario = resolve_scenario(None, folder)
        if not isinstance(scenario, ComparisonScenario):
            raise UserError(f"{folder}: a {scenario.kind} run; `pdrepro compare --judge` judges comparison runs "
                            f"(judge this one with `{advice.check(folder)}`)")
        verdict = verdict_of(RunDir(folder), CheckRequest(folder))
        table = render_comparison(portable(verdict.summary.to_json(), folder))  # type: ignore[attr-defined]
        texts.append(verdict.record().header() + "\n" + table.rstrip("\n") + "\n\n" + verdict.text + "\n"
                     + verdict.count)
        # One schema with `check`: each run's verdict, its comparison table's data as its summary.
        members.append(verdict.record().model_copy(
            update={"summary": portable(verdict.summary.to_json(), folder)}))  # type: ignore[attr-defined]
        errors += [verdict.error] if verdict.error else []
        worst = max(worst, verdict.status)
    passed = sum(m.exit_status == 0 for m in members)
    data = VerdictRecord(kind="compare", run=str(run), scenario=members[0].scenario if len(members) == 1 else None,
                         passed=worst == 0, exit_status=worst, count=f"{passed} of {len(members)} comparison run(s) "
                         "passed", members=members)
    return "\n\n".join(texts), data, errors, worst
