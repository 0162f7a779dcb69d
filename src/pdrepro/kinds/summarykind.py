"""The kinds that make one run's summary.json (sweep, smoke, compare): `pdrepro check` and `pdrepro analyze` print
the same for each, and each kind gives its judged summary (in memory) and writes its own outputs."""

from __future__ import annotations

import sys
from abc import abstractmethod
from typing import Any

from tabulate import tabulate

from ..analysis.verdictsource import Judged
from ..core.errors import UserError
from ..core.exits import EXIT_BAD_INPUT, EXIT_FAILED
from ..core.figures import against
from ..report.markdown import ceiling_lines, measured_table
from ..rundir import RunDir
from ..rundir.issuekind import IssueKind
from ..rundir.request import AnalyzeRequest, CheckRequest
from ..rundir.summarymodel import as_summary
from ..scenario.model import Scenario, resolve_scenario
from ..scenario.recorded import own_scenario
from ..scenario.seams import summary_backend
from ..verdicts.bounds import bound_changes
from ..verdicts.gates import evaluate, failed, not_applicable
from ..verdicts.outcome import Verdict, result_data
from .base import RunKind


def _fmt(value: float | None, unit: str, op: str = "", bound: float | None = None) -> str:
    if value is None:
        return "—"
    return f"{against(value, op, bound)} {unit}".rstrip()  # never rounded across its bound


class SummaryKind(RunKind):
    """A kind of run whose verdict is drawn from its summary.json's model (summarymodel.model_for)."""

    @abstractmethod
    def judged(self, run: RunDir, scenario: Scenario) -> Judged:
        """The summary a verdict is drawn from, made in memory from the run's inputs; nothing is written."""

    @abstractmethod
    def write(self, run: RunDir, scenario: Scenario) -> dict[str, Any]:
        """The summary made from the run's inputs and written with its report; returned as computed."""

    def verdict(self, run: RunDir, args: CheckRequest) -> Verdict:
        scenario = resolve_scenario(args.scenario, run.root, args.thresholds)
        own = own_scenario(run) if run.root.is_dir() else None
        judged = self.judged(run, scenario)
        summary = judged.summary
        results = evaluate(summary, scenario)
        table = [[r.name, "all" if r.prompt_len is None else str(r.prompt_len), _fmt(r.figure, r.unit, r.op, r.bound),
                  "" if r.bound is None else f"{r.op} {r.bound:g} {r.unit}".rstrip(), r.verdict]
                 for r in results]
        out = [tabulate(table, headers=["check", "length", "figure", "bound", "verdict"], tablefmt="simple",
                        disable_numparse=True), ""]
        bad, idle = failed(results), not_applicable(results)
        out += [f"FAIL {r.detail}" for r in bad]
        out += [f"N/A  {r.detail}" for r in idle]
        out += [f"WARN {i.message} (the scenario's pins_match: warn)" for i in summary.issues
                if i.kind == IssueKind.PINS_DIFFER and scenario.pins_match == "warn"]
        out += [f"engine ceiling: {line}" for line in ceiling_lines(summary)]
        warnings = [i.message for i in summary.issues if i.severity == "warning"]  # they bear on what the figures mean
        out += [f"WARN {w}" for w in warnings]
        out += [f"NOTE {note}" for note in judged.notes]
        bounds: list[str] = []
        if own is not None and (args.scenario is not None or args.thresholds is not None):
            # Judged by other bounds than the run's own, as asked: say which.
            bounds = list(bound_changes(own, scenario))
            out += [f"BOUND {line}" for line in bounds]
        passed = len(results) - len(bad) - len(idle)
        errors = summary.input_errors()
        status = EXIT_BAD_INPUT if errors else EXIT_FAILED if bad else 0
        # What was judged is named by what the run holds: the backend whose log lines the analysis read.
        data = {"kind": self.name, "run": str(run.root), "scenario": scenario.name,
                "transfer_backend": summary_backend(summary).name, "passed": status == 0, "exit_status": status,
                "checks": [result_data(r) for r in results], "warnings": warnings, "notes": list(judged.notes),
                "bounds": bounds, "input_error": errors[0].message if errors else None}
        return Verdict(out, f"{passed} passed, {len(bad)} failed" + (f", {len(idle)} not applicable" if idle else ""),
                       data, status, errors[0].message if errors else None, summary)

    def analyze(self, run: RunDir, args: AnalyzeRequest) -> int:
        scenario = resolve_scenario(args.scenario, args.run)
        print(f"analysing {run.root} with scenario {scenario.name} ...", file=sys.stderr)
        summary = as_summary(self.write(run, scenario))
        if summary.rows:
            print(measured_table(summary))
            print()
        for i in summary.issues:
            if i.severity != "error":
                print(f"note: {i.message}", file=sys.stderr)
        print(f"summary: {run.summary_file}")
        print(f"report:  {run.report_file}")
        if run.plots_dir.is_dir():
            print(f"plots:   {run.plots_dir}/")
        errors = summary.input_errors()
        if errors:
            more = f" (and {len(errors) - 1} more problem(s): see {run.report_file})" if len(errors) > 1 else ""
            raise UserError(errors[0].message + more)
        return 0
