"""One fault against a running host stack, with its load: start the load through the router, wait until requests
are in flight, hit the role (SIGKILL to it and what it forked, then start it again from its recorded command; or
SIGSTOP, then SIGCONT after N seconds, always, also on a stop or an error), measure the time until the router
answers again, let every request end, and gather what the servers logged and counted."""

from __future__ import annotations

import logging
import math
import signal
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from ..core import signals
from ..core.errors import UserError
from ..launch.stack import record, restart
from ..rundir.faultsummary import FaultResult, account
from . import faultclient, faultevidence, faultundo

log = logging.getLogger(__name__)

# The recorded process each fault is aimed at.
TARGET = {"kill-decode": "decode-0", "kill-prefill": "prefill-0", "stop-decode": "decode-0", "kill-router": "router"}
# How long a killed process may take to end before the fault is called not run.
GONE_WITHIN_S = faultundo.GONE_WITHIN_S
PROBE_EVERY_S = 0.2


@dataclass(frozen=True)
class FaultPlan:
    stack_run: Path
    fault: str
    shape: faultclient.LoadShape
    stop_s: float
    recovery_bound_s: float
    info_path: str | None        # the engine's server-info path, which a restarted server must answer


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def probe(shape: faultclient.LoadShape, timeout_s: float) -> bool:
    """The router answers a request (HTTP 200 with a body) now."""
    outcome, _, _ = signals.wait_for(lambda: faultclient.post(shape.router_url + "/generate",
                                                              faultclient.body(shape, 0), timeout_s))
    return outcome == "answered"


def answered_again(shape: faultclient.LoadShape, since: float, bound_s: float) -> float | None:
    """Seconds from ``since`` (monotonic) until the router answered a probe, or None: not within ``bound_s``."""
    while True:
        left = since + bound_s - time.monotonic()
        if left <= 0:
            return None
        if probe(shape, max(0.2, min(5.0, left))):
            done = time.monotonic() - since
            return round(done, 3) if done <= bound_s else None
        signals.sleep(PROBE_EVERY_S)


def _restart(plan: FaultPlan, target: restart.Role, since: float, hit: faultundo.Hit) -> tuple[bool, str]:
    """Starts the killed role again and waits until it is up (within the recovery bound): (up, the seconds from the
    kill until it was up; or why not)."""
    hit.again = faultundo.start_role(plan.stack_run, target, plan.info_path)
    up, why = faultundo.until_up(hit.again, target.entry.name, since + plan.recovery_bound_s,
                                 f"was not up {plan.recovery_bound_s:g} s after the kill")
    if not up:
        return False, why
    hit.up = True
    return True, f"{time.monotonic() - since:.3f}"


def _in_flight_now(load: faultclient.Load) -> bool:
    """The load is in its stride: a quarter of it has ended (at least one request), and requests are in flight."""
    _, ended = load.counts()
    return ended >= max(1, load.shape.requests // 4) and bool(load.in_flight())


def _finish_limit(shape: faultclient.LoadShape, stop_s: float, bound_s: float) -> float:
    """Every request ends by its own timeout: the waves of the load, each at most that long, after the fault."""
    waves = math.ceil(shape.requests / shape.concurrency)
    return waves * (shape.timeout_s + 1.0) + stop_s + bound_s + 10.0




def run_fault(plan: FaultPlan) -> FaultResult:
    """The fault run as planned; a fault that could not be run as asked is a result with its error (it fails). A
    signal at any point is answered by undoing the fault first (faultundo), then ``faultundo.Interrupted`` with
    the result as far as it got."""
    rec = record.read(plan.stack_run)
    assert rec.stack_id is not None
    name = TARGET[plan.fault]
    target = restart.role(rec, name)  # proven ours before any load starts: one line if not
    marks = faultevidence.marks(plan.stack_run, rec)
    scraped = {n: faultevidence.scrape(url) for n, url in faultevidence.servers(rec)}
    started_at = _now()
    load = faultclient.Load(plan.shape)
    log.info(f"fault {plan.fault}: load started ({plan.shape.requests} requests, at most {plan.shape.concurrency} "
             "in flight)")
    load.start()
    base = {"fault": plan.fault, "target": name, "started_at": started_at, "recovery_bound_s": plan.recovery_bound_s,
            "client_timeout_s": plan.shape.timeout_s}
    hit = faultundo.Hit()
    error: str | None = None
    try:
        if not load.wait_until(_in_flight_now, plan.shape.timeout_s + 5.0):
            error = "no request was in flight before the load ended or stalled: the fault was not injected"
        else:
            error = _inject(plan, target, rec.stack_id, load, hit)
        requests = load.finish(_finish_limit(plan.shape, plan.stop_s, plan.recovery_bound_s))
    except KeyboardInterrupt as exc:
        signum = getattr(exc, "signum", signal.SIGINT)
        # The fault's own doing is undone before anything else: the stack is left as the fault found it.
        undo = faultundo.undo(plan.stack_run, plan.fault, target, rec.stack_id, plan.info_path, hit)
        fields = {**hit.fields, "restarted": hit.up} if plan.fault.startswith("kill-") and hit.killed else hit.fields
        lines, more, startup = faultevidence.error_lines(marks)
        requests = load.snapshot()
        result = FaultResult.model_validate({
            **base, **fields, "error": f"interrupted by {signals.name_of(signum)} before it ended",
            "interrupted": signals.name_of(signum), "undo": undo, "requests": requests, "counts": account(requests),
            "log_lines": tuple(lines), "log_lines_more": more, "log_lines_startup": startup})
        raise faultundo.Interrupted(signum, result) from None
    after = record.read(plan.stack_run)
    restarted = {name} if hit.fields.get("restarted") else set()
    metrics = tuple(faultevidence.window(n, scraped.get(n), faultevidence.scrape(url), n in restarted)
                    for n, url in faultevidence.servers(after))
    lines, more, startup = faultevidence.error_lines(marks)
    return FaultResult.model_validate({**base, **hit.fields, "error": error, "requests": requests,
                                       "counts": account(requests), "log_lines": tuple(lines), "log_lines_more": more,
                                       "log_lines_startup": startup,
                                       "metrics": metrics})


def _inject(plan: FaultPlan, target: restart.Role, stack_id: str, load: faultclient.Load,
            hit: faultundo.Hit) -> str | None:
    """Hits the role; the result's fields go into ``hit.fields`` as they are known (a stop keeps them). Returns
    why the fault could not be run as asked, or None."""
    fields = hit.fields
    fields.update(in_flight_at_fault=len(load.in_flight()), fault_at_s=round(load.now(), 4))
    if plan.fault.startswith("kill-"):
        since = time.monotonic()
        fields["signalled"] = tuple(restart.send(target.all, stack_id, signal.SIGKILL))
        hit.killed = bool(fields["signalled"])
        if not fields["signalled"]:
            fields["restarted"] = False
            return f"{target.entry.name}: SIGKILL reached none of its processes"
        log.info(f"fault {plan.fault}: SIGKILL sent to {', '.join(fields['signalled'])}")
        left = restart.wait_gone(target.all, GONE_WITHIN_S)
        if left:
            fields["restarted"] = False
            return f"{', '.join(f.line() for f in left)}: still running {GONE_WITHIN_S:g} s after SIGKILL"
        up, why = _restart(plan, target, since, hit)
        fields["restarted"] = up
        if not up:
            fields["recovery_note"] = why
            return None
        fields["restart_up_s"] = float(why)
        fields["recovery_s"] = answered_again(plan.shape, since, plan.recovery_bound_s)
        if fields["recovery_s"] is None:
            fields["recovery_note"] = f"the router did not answer within {plan.recovery_bound_s:g} s of the kill"
        return None
    # stop-decode: SIGSTOP, then SIGCONT after stop_s, whatever happens in between.
    t_stop = time.monotonic()
    try:
        hit.stopped = restart.send(target.all, stack_id, signal.SIGSTOP)
        fields["signalled"] = tuple(hit.stopped)
        if hit.stopped:
            log.info(f"fault {plan.fault}: SIGSTOP sent to {', '.join(hit.stopped)}; SIGCONT in {plan.stop_s:g} s")
        signals.sleep(plan.stop_s)
    finally:
        # Under stop_on_signals a second signal only notes itself: nothing cuts this resume short.
        hit.resumed = restart.send(target.all, stack_id, signal.SIGCONT)
        fields["stopped_for_s"] = round(time.monotonic() - t_stop, 3)
        fields["resumed"] = set(hit.stopped) <= set(hit.resumed)
    since = time.monotonic()
    if not hit.stopped:
        return f"{target.entry.name}: SIGSTOP reached none of its processes"
    if not fields["resumed"]:
        return f"SIGCONT did not reach {', '.join(sorted(set(hit.stopped) - set(hit.resumed)))}"
    fields["recovery_s"] = answered_again(plan.shape, since, plan.recovery_bound_s)
    if fields["recovery_s"] is None:
        fields["recovery_note"] = f"the router did not answer within {plan.recovery_bound_s:g} s of the SIGCONT"
    return None


def check_stack(stack_run: Path) -> record.StackRecord:
    """The stack record, with the disaggregated stack every fault needs (refused in one line if not)."""
    rec = record.read(stack_run)
    if rec.stack != "disaggregated":
        raise UserError(f"{stack_run}: runs the {rec.stack} stack; `pdrepro fault` hits a disaggregated stack's "
                        "prefill, decode and router: start one with `pdrepro stack up` (no --stack regular)")
    return rec
