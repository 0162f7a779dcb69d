"""A fault run's report (OUT/fault-report.md): one row per fault (requests in flight when it hit, answered,
errored, lost, recovery time against its bound, the verdict), then per fault the checks that failed, the servers'
/generate counters over its window and the error lines their logs gained. It reads the summary as its model and
the verdicts as `pdrepro check` draws them."""

from __future__ import annotations

from ..rundir.faultsummary import FaultResult, FaultSummary, account
from ..verdicts.fault import fault_checks, run_checks
from ..verdicts.result import CheckResult, failed


def _n(value: float | int | None) -> str:
    return "—" if value is None else f"{value:g}"


def _verdict(results: list[CheckResult]) -> str:
    bad = failed(results)
    return "PASS" if not bad else "FAIL: " + ", ".join(r.name for r in bad)


def fault_table(summary: FaultSummary) -> str:
    headers = ["fault", "target", "requests", "in flight at the fault", "answered", "errored", "lost",
               "recovery (s)", "bound (s)", "verdict"]
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    for f in summary.faults:
        c = account(f.requests)
        cells = [f.fault, f.target, str(len(f.requests)), str(f.in_flight_at_fault), str(c.answered), str(c.errored),
                 str(c.lost), _n(f.recovery_s), _n(f.recovery_bound_s), _verdict(fault_checks(summary, f))]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _section(summary: FaultSummary, f: FaultResult) -> list[str]:
    out = [f"## {f.fault} ({f.target})", ""]
    what = "SIGKILL, then started again from its recorded command" if f.fault.startswith("kill-") else \
        f"SIGSTOP, SIGCONT after {_n(f.stopped_for_s)} s"
    out.append(f"- {what}; signalled: {', '.join(f.signalled) or 'none'}")
    out.append(f"- load started {f.started_at}; fault at {_n(f.fault_at_s)} s into it; client timeout "
               f"{f.client_timeout_s:g} s")
    if f.restart_up_s is not None:
        out.append(f"- the restarted {f.target} was up {f.restart_up_s:g} s after the kill")
    if f.error:
        out.append(f"- not run as asked: {f.error}")
    if f.undo is not None:
        out.append(f"- stopped by {f.interrupted} before it ended; undone before the command ended: {f.undo.line}")
    if f.recovery_note:
        out.append(f"- recovery: {f.recovery_note}")
    for r in failed(fault_checks(summary, f)):
        out.append(f"- FAIL {r.detail}")
    lost = [r for r in f.requests if account([r]).lost]
    if lost:
        out.append("- lost requests (no answer, no error): " + ", ".join(
            f"#{r.index} sent at {_n(r.sent_s)} s" for r in lost[:20]) + (" …" if len(lost) > 20 else ""))
    out += ["", "| server | /generate answered | of them failed | requests processed | note |", "|---|---|---|---|---|"]
    out += [f"| {m.server} | {_n(m.generate_responses)} | {_n(m.generate_failed)} | {_n(m.requests_processed)} | "
            f"{m.note} |" for m in f.metrics]
    out += ["", f"Error lines the servers logged in the window ({len(f.log_lines)}"
                + (f", and {f.log_lines_more} more" if f.log_lines_more else "")
                + (f"; {f.log_lines_startup} start-up lines of a (re)starting server left out" if f.log_lines_startup
                   else "") + "):", ""]
    if f.log_lines:
        out += ["```"] + [f"{line.server}: {line.line}" for line in f.log_lines] + ["```"]
    else:
        out.append("none")
    return out + [""]


def render(summary: FaultSummary) -> str:
    run = run_checks(summary)
    every = run + [r for f in summary.faults for r in fault_checks(summary, f)]
    out = ["# Fault injection", "",
           f"Stack {summary.stack_run} (scenario {summary.scenario}), router {summary.router_url}; "
           f"{summary.requests_per_fault} requests per fault, at most {summary.concurrency} in flight; recovery bound "
           f"{summary.recovery_bound_s:g} s ({summary.bound_source}).", "",
           f"Verdict: {'PASS' if not failed(every) else 'FAIL'} ({len(every) - len(failed(every))} passed, "
           f"{len(failed(every))} failed).", "",
           "Answered: HTTP 200 with a body. Errored: an error the client saw (an HTTP status, a refused or reset "
           "connection). Lost: neither before the client's timeout; a lost request fails the run.", "",
           fault_table(summary), ""]
    out += [f"- FAIL {r.detail}" for r in failed(run)]
    for f in summary.faults:
        out += _section(summary, f)
    return "\n".join(out).rstrip() + "\n"
