"""A load sweep's run (`pdrepro load`): one folder per step (RUN/steps/<step>/, a one-length run of its own) and
RUN/load-state.json, the load's own record of its plan and steps; judged per step (analysis.load,
verdicts.load) and written as RUN/load-summary.json, RUN/report.md and its plot (publish.loadresults)."""

from __future__ import annotations

from ..analysis.load import compute_load_summary
from ..core.exits import EXIT_BAD_INPUT, EXIT_FAILED
from ..core.figures import against
from ..publish.loadresults import summary_path, write_load_results
from ..report.load import step_table
from ..rundir import RunDir, loadstate
from ..rundir.loadsummary import LoadSummary
from ..rundir.request import AnalyzeRequest, CheckRequest
from ..scenario.model import Scenario, resolve_scenario
from ..scenario.recorded import own_scenario
from ..scenario.seams import run_backend
from ..verdicts.bounds import bound_changes
from ..verdicts.load import failed, run_checks, step_checks
from ..verdicts.outcome import Verdict, result_data
from .base import RunKind
from .checktable import check_table

# The scenario's bounds a load's gates read (a changed bound of the sweep's own is not the load's to name).
LOAD_BOUNDS = ("max_request_errors", "max_transfer_p99_over_p50")


def check_load(run_dir: RunDir, args: CheckRequest) -> Verdict:
    """`pdrepro check RUN` of a load run: the run's own checks (its members) and the load gates per step, judged
    from a fresh analysis in memory; nothing is written."""
    scenario = resolve_scenario(args.scenario, run_dir.root, args.thresholds)
    summary = compute_load_summary(run_dir, scenario)
    per_step = [("(run)", r) for r in run_checks(summary)]
    per_step += [(step.name, r) for step in summary.steps for r in step_checks(summary, step)]
    results = [r for _, r in per_step]
    out = [check_table(per_step, "step", lambda x, r: against(x, r.op, r.bound)), ""]
    bad = failed(results)
    out += [f"FAIL {r.detail}" for r in bad]
    warnings = [i.message for i in summary.issues if i.severity == "warning"]
    out += [f"WARN {w}" for w in warnings]
    own = own_scenario(run_dir) if run_dir.root.is_dir() else None
    bounds: list[str] = []
    if own is not None and (args.scenario is not None or args.thresholds is not None):
        # Judged by other bounds than the run's own, as asked: say which of the load's.
        bounds = [line for line in bound_changes(own, scenario) if line.startswith(LOAD_BOUNDS)]
        out += [f"BOUND {line}" for line in bounds]
    errors = summary.input_errors()
    status = EXIT_BAD_INPUT if errors else EXIT_FAILED if bad else 0
    data = {"kind": "load", "run": str(run_dir.root), "scenario": scenario.name,
            "transfer_backend": run_backend(run_dir.root, scenario).name, "passed": status == 0, "exit_status": status,
            "checks": [{**result_data(r), "step": name} for name, r in per_step], "warnings": warnings,
            "notes": [], "bounds": bounds, "input_error": errors[0].message if errors else None}
    return Verdict(out, f"{len(results) - len(bad)} passed, {len(bad)} failed", data, status,
                   errors[0].message if errors else None)


class Load(RunKind):
    name = "load"
    summary_model = LoadSummary

    def records(self, run: RunDir) -> bool:
        return loadstate.present(run.root)

    def verdict(self, run: RunDir, args: CheckRequest) -> Verdict:
        return check_load(run, args)

    def composite_summary(self, run: RunDir, scenario: Scenario | None) -> LoadSummary:
        return compute_load_summary(run, scenario if scenario is not None else resolve_scenario(None, run.root))

    def analyze(self, run: RunDir, args: AnalyzeRequest) -> int:
        scenario = resolve_scenario(args.scenario, args.run)
        print(step_table(write_load_results(run, scenario)))
        print(f"summary: {summary_path(run)}\nreport:  {run.report_file}")
        return 0
