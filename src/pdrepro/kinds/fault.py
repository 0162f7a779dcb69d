"""A fault run (`pdrepro fault`): OUT/fault-summary.json, every request of each fault's load with how it ended;
judged per fault from those requests (verdicts.fault), its report OUT/fault-report.md (report.fault)."""

from __future__ import annotations

from ..core.exits import EXIT_FAILED
from ..report.fault import fault_table, render
from ..rundir import RunDir, faultsummary, ownoutputs
from ..rundir.faultsummary import FaultSummary
from ..rundir.request import AnalyzeRequest, CheckRequest
from ..verdicts.fault import fault_checks, run_checks
from ..verdicts.outcome import Verdict, result_data
from ..verdicts.result import failed
from .base import RunKind
from .checktable import check_table


def judge(summary: FaultSummary) -> Verdict:
    per = [("(run)", r) for r in run_checks(summary)]
    per += [(f.fault, r) for f in summary.faults for r in fault_checks(summary, f)]
    results = [r for _, r in per]
    out = [check_table(per, "fault", lambda x, _: f"{x:g}"), ""]
    bad = failed(results)
    out += [f"FAIL {r.detail}" for r in bad]
    status = EXIT_FAILED if bad else 0
    data = {"run": None, "kind": "fault", "passed": status == 0, "exit_status": status,
            "checks": [{**result_data(r), "fault": where} for where, r in per]}
    return Verdict(out, f"{len(results) - len(bad)} passed, {len(bad)} failed", data, status, summary=summary)


class Fault(RunKind):
    name = "fault"
    summary_model = FaultSummary
    measures_ttft = False
    has_fabric = False

    def records(self, run: RunDir) -> bool:
        return faultsummary.present(run.root)

    def verdict(self, run: RunDir, args: CheckRequest) -> Verdict:
        got = judge(faultsummary.read(run.root))
        got.data["run"] = str(run.root)
        return got

    def analyze(self, run: RunDir, args: AnalyzeRequest) -> int:
        # The report is drawn again from the summary the fault run wrote (nothing else is measured afterwards).
        summary = faultsummary.read(run.root)
        ownoutputs.write_outputs(run.root, {faultsummary.REPORT: render(summary)}, "fault")
        print(fault_table(summary))
        print(f"report: {run.root / faultsummary.REPORT}")
        return 0
