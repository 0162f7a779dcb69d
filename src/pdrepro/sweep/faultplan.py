"""The faults `pdrepro fault` was asked for, run one after the other against one stack: before each, the router
must answer (the stack has recovered from the one before); after each, the summary so far is handed to the
caller to write, so a stop keeps the faults done. At the end: whether the stack is whole again. A signal ends the
run with the summary so far, marked interrupted (the fault it cut short undone first, in faultrun)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from .. import engines
from ..core import signals
from ..core.errors import UserError
from ..launch.stack import proof, ready, record
from ..rundir.faultsummary import Counts, FaultResult, FaultSummary
from . import faultclient, faultrun, faultundo


@dataclass(frozen=True)
class FaultRequest:
    stack_run: Path
    faults: tuple[str, ...]
    requests: int
    concurrency: int
    client_timeout_s: float
    prompt_tokens: int
    new_tokens: int
    stop_s: float
    recovery_bound_s: float
    bound_source: str


def router_url(rec: record.StackRecord) -> str:
    router = next((p for p in rec.processes if p.role.value == "router"), None)
    if router is None:
        raise UserError("the stack record names no router; start the disaggregated stack with `pdrepro stack up`")
    parts = router.health_url.split("/", 3)
    return f"{parts[0]}//{parts[2]}"


def _not_run(fault: str, why: str, req: FaultRequest) -> FaultResult:
    """A fault that could not start (its target not proven ours, the stack not answering): it fails."""
    return FaultResult.model_validate({
        "fault": fault, "target": faultrun.TARGET[fault], "error": why,
        "started_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "recovery_bound_s": req.recovery_bound_s, "client_timeout_s": req.client_timeout_s, "requests": (),
        "counts": Counts(answered=0, errored=0, lost=0)})


def whole(rec: record.StackRecord) -> bool:
    """Every recorded process proven ours and answering its health URL."""
    survey = proof.survey(rec)
    return bool(rec.processes) and all(f.ours for f in survey.recorded) and all(
        ready.answers(p.health_url, timeout=3.0) for p in rec.processes)


def _whole_within(stack_run: Path, limit_s: float) -> bool:
    """Waits until the stack is whole (health URLs only: a request of the fault's own would take a place in the
    servers' queues that the load does not account for), answering a signal within a poll."""
    deadline = time.monotonic() + limit_s
    while not signals.wait_for(lambda: whole(record.read(stack_run))):
        if time.monotonic() > deadline:
            return False
        signals.sleep(0.2)
    return True


def _running_and_ours(stack_run: Path, rec: record.StackRecord) -> None:
    """Before any load: every process the record names runs and is proven the stack's (one line, exit 2, if not;
    nothing is signalled)."""
    survey = proof.survey(rec)
    if survey.refused:
        raise UserError(f"{record.path(stack_run)} names {survey.refused[0].line()}; nothing is signalled through a "
                        "record that names a process not the stack's: take the stack down and start it again")
    gone = [f for f in survey.recorded if not f.ours]
    if gone or not survey.recorded:
        which = gone[0].line() if gone else "no process"
        raise UserError(f"{stack_run}: the stack does not run ({which}); start it with `pdrepro stack up --out "
                        f"{stack_run}`, then run the fault")


def run_all(req: FaultRequest, on_progress: Callable[[FaultSummary], None]) -> FaultSummary:
    rec = faultrun.check_stack(req.stack_run)
    if rec.stack_id is None:
        raise UserError(f"{record.path(req.stack_run)}: a version 1 record holds no stack id, so no process of it can be "
                        "proven ours; start the stack with this `pdrepro stack up`")
    _running_and_ours(req.stack_run, rec)
    url = router_url(rec)
    shape = faultclient.LoadShape(url, req.requests, req.concurrency, req.client_timeout_s, req.prompt_tokens,
                                  req.new_tokens)
    info_path = engines.engine(rec.engine or engines.names()[0]).info_path
    summary = FaultSummary(stack_run=str(req.stack_run), scenario=rec.scenario, stack_id=rec.stack_id,
                           router_url=url, requests_per_fault=req.requests, concurrency=req.concurrency,
                           recovery_bound_s=req.recovery_bound_s, bound_source=req.bound_source, faults=())
    broken: str | None = None
    try:
        for fault in req.faults:
            if broken is not None and not signals.wait_for(lambda: whole(record.read(req.stack_run))):
                # The fault before left a role down or stopped: no wait for a recovery that will not come.
                result = _not_run(fault, f"the stack is not whole after {broken}", req)
            elif not _whole_within(req.stack_run, req.recovery_bound_s):
                result = _not_run(fault, f"the stack was not whole (every process ours and answering its health "
                                         f"URL) within {req.recovery_bound_s:g} s before the fault", req)
            else:
                try:
                    result = faultrun.run_fault(faultrun.FaultPlan(req.stack_run, fault, shape, req.stop_s,
                                                                   req.recovery_bound_s, info_path))
                except UserError as exc:
                    result = _not_run(fault, str(exc), req)
            if result.restarted is False or result.resumed is False:
                broken = result.fault
            summary = summary.model_copy(update={"faults": (*summary.faults, result)})
            on_progress(summary)
    except faultundo.Interrupted as exc:
        # The fault a signal cut short was undone on the way here: it is kept with what it got and what was undone.
        return summary.model_copy(update={"faults": (*summary.faults, exc.result), "interrupted": exc.name})
    except KeyboardInterrupt as exc:
        # Between faults, or before a fault hit: nothing of the fault's own to undo; the run is still partial.
        return summary.model_copy(update={"interrupted": signals.signal_name(exc)})
    return summary.model_copy(update={"stack_up_after": whole(record.read(req.stack_run))})
