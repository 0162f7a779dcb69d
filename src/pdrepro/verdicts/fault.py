"""The verdict on a fault run, per fault, drawn from the requests it recorded (never from the counts it claims):
the fault was run as asked, requests were in flight when it hit, no request was lost without an error, the
counts the summary holds are the requests' own, a stopped process was resumed, and the router answered again
within the recovery bound; a fault a signal cut short was restored. Any fault failing one of these fails the run;
so does a run that ran no fault, or one a signal stopped."""

from __future__ import annotations

from ..rundir.faultsummary import FaultResult, FaultSummary, account
from .result import CheckResult, check


def _is(name: str, fault: str, ok: bool, detail: str) -> CheckResult:
    return CheckResult(name, None, None, None, "", ok, f"{fault}: {detail}")


def fault_checks(summary: FaultSummary, fault: FaultResult) -> list[CheckResult]:
    name = fault.fault
    counts = account(fault.requests)
    out = [_is("fault_injected", name, fault.error is None,
               "injected" if fault.error is None else f"not run as asked: {fault.error}"),
           _is("counts_match_requests", name, counts == fault.counts,
               "the counts are the requests' own" if counts == fault.counts else
               f"the summary claims {fault.counts.model_dump()}, its requests give {counts.model_dump()}"),
           _is("every_request_recorded", name, len(fault.requests) == summary.requests_per_fault
               and sorted(r.index for r in fault.requests) == list(range(summary.requests_per_fault)),
               f"{len(fault.requests)} request record(s) for {summary.requests_per_fault} request(s) sent"),
           check("in_flight_at_fault", None, float(fault.in_flight_at_fault), ">=", 1, "requests",
                 f"{name}: requests in flight when it hit:"),
           check("lost_without_error", None, float(counts.lost), "<=", 0, "requests",
                 f"{name}: requests with neither an answer nor an error before the client's "
                 f"{fault.client_timeout_s:g} s timeout:")]
    if name.startswith("stop-"):
        out.append(_is("resumed", name, fault.resumed is True,
                       "every stopped process was resumed (SIGCONT)" if fault.resumed else "not every stopped process "
                       "was resumed: resume it by hand (kill -CONT) or take the stack down"))
    else:
        out.append(_is("restarted", name, fault.restarted is True,
                       "started again from its recorded command" if fault.restarted else
                       f"not started again: {fault.recovery_note or 'see the error'}"))
    if fault.undo is not None:
        out.append(_is("restored", name, fault.undo.ok, f"after the stop: {fault.undo.line}"))
    out.append(check("recovery_s", None, fault.recovery_s, "<=", fault.recovery_bound_s, "s",
                     f"{name}: router answering again after" + (f" ({fault.recovery_note})" if fault.recovery_note else "")))
    return out


def run_checks(summary: FaultSummary) -> list[CheckResult]:
    out = [_is("faults_run", "(run)", bool(summary.faults), f"{len(summary.faults)} fault(s) run")]
    if summary.interrupted is not None:
        # A run a signal stopped is partial: what it did not finish is unknown, and unknown never passes.
        out.append(_is("not_interrupted", "(run)", False, f"interrupted by {summary.interrupted}: a partial run, "
                                                          "not a PASS"))
    if summary.stack_up_after is not None:
        out.append(_is("stack_up_after", "(run)", summary.stack_up_after,
                       "every process of the stack ran and answered at the end" if summary.stack_up_after else
                       "the stack was not whole at the end: see `pdrepro stack status`"))
    return out
