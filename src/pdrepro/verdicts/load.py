"""Verdicts on a load sweep's summary (rundir.loadsummary.LoadSummary), per step:
- step_measured: the step's bench client finished with a result (a step that failed or was stopped measured
  nothing, and nothing unmeasured passes);
- failed_requests: the bench client's failed requests, at most the scenario's thresholds.max_request_errors
  (default 0: no failed request);
- server_failed: failed /generate answers the scraped servers counted, held to the same bound (a server may
  fail a request the router then retried or answered otherwise; judged where --metrics scraped it);
- transfer_tail: per-request KV transfer time p99 within thresholds.max_transfer_p99_over_p50 (default 3) times
  its p50; a step without transfer figures fails it (no evidence is no pass).
Each result is a gates.CheckResult, so `pdrepro check` prints them as it prints a sweep's.
"""

from __future__ import annotations

from ..rundir.loadsummary import LoadStepFigures, LoadSummary
from .result import CheckResult


def _bound(name: str, step: LoadStepFigures, figure: float | None, bound: float, unit: str, what: str) -> CheckResult:
    if figure is None:
        return CheckResult(name, None, None, bound, unit, False, f"step {step.name}: no {what} to judge", "<=")
    ok = figure <= bound
    return CheckResult(name, None, figure, bound, unit, ok,
                       f"step {step.name}: {what} {figure:g} {'<=' if ok else '>'} {bound:g}", "<=")


def _members(summary: LoadSummary, name: str) -> list[CheckResult]:
    """member_identity: what the step's own files (or, for '.', the run's) contradict in the plan; each a FAIL."""
    return [CheckResult("member_identity", None, None, None, "", False, f.message())
            for f in summary.members if f.member == name]


def run_checks(summary: LoadSummary) -> list[CheckResult]:
    """The checks of the load run itself rather than of one step (its recorded scenario against the plan's)."""
    steps = {s.name for s in summary.steps}
    return [r for name in sorted({f.member for f in summary.members} - steps) for r in _members(summary, name)]


def step_checks(summary: LoadSummary, step: LoadStepFigures) -> list[CheckResult]:
    return _members(summary, step.name) + _step_checks(summary, step)


def _step_checks(summary: LoadSummary, step: LoadStepFigures) -> list[CheckResult]:
    t = summary.thresholds
    if step.status != "done":
        why = f" ({step.reason})" if step.reason else ""
        return [CheckResult("step_measured", None, None, None, "", False,
                            f"step {step.name}: {step.status}{why}; rerun `pdrepro load` with the same --out")]
    out = [CheckResult("step_measured", None, None, None, "", True, f"step {step.name}: measured")]
    failed = _bound("failed_requests", step, None if step.failed_requests is None else float(step.failed_requests),
                    float(t.max_request_errors), "requests", "failed requests (bench client)")
    if not failed.passed and step.first_error:
        failed = CheckResult(**{**failed.__dict__, "detail": f"{failed.detail}; first: {step.first_error[:160]!r}"})
    out.append(failed)
    server = step.server_failed()
    if server is not None:
        out.append(_bound("server_failed", step, server, float(t.max_request_errors), "requests",
                          "failed /generate answers (servers' /metrics)"))
    out.append(_bound("transfer_tail", step, step.transfer_p99_over_p50, t.max_transfer_p99_over_p50, "x",
                      "transfer time p99/p50"))
    return out


def evaluate_load(summary: LoadSummary) -> list[CheckResult]:
    return run_checks(summary) + [r for step in summary.steps for r in step_checks(summary, step)]


def failed(results: list[CheckResult]) -> list[CheckResult]:
    return [r for r in results if not r.passed]
