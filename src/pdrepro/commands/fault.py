"""``pdrepro fault``: faults injected into a running host stack (`pdrepro stack up`) while a bounded load runs
through its router, every request accounted for, the recovery timed, judged by `pdrepro check OUT` as a fault run
(kinds/fault.py). The module's top level stays light: the work is imported inside ``run``."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from ..core.errors import UserError

FAULTS = ("kill-decode", "kill-prefill", "stop-decode", "kill-router")
HELP = "kill or stop a running host stack's servers under load, account for every request, time the recovery"


def register(sub) -> None:
    p = sub.add_parser(
        "fault", help=HELP,
        description=(
            "Against the stack `pdrepro stack up --out STACK_RUN` started (prefill, decode, router), for each fault "
            "asked: start a load of --requests requests through the router (at most --concurrency in flight), and "
            "once requests are in flight: kill-decode / kill-prefill / kill-router sends SIGKILL to that server and "
            "what it forked, then starts it again from the command STACK_RUN/stack.json records for it; stop-decode "
            "sends SIGSTOP to the decode server and SIGCONT --stop-seconds later (always: also on Ctrl-C or an "
            "error). Only processes the stack record proves ours are signalled (the proof `stack down` uses). The "
            "recovery is the time from the kill (or the SIGCONT) until the router answers a request again. Every "
            "request is answered, errored (an error the client saw) or lost (neither before --client-timeout); "
            "a lost request, or a recovery longer than the scenario's thresholds.max_fault_recovery_s (or "
            "--recovery-bound), fails. Writes OUT/fault-summary.json and OUT/fault-report.md (with the servers' "
            "/metrics counters and the error lines their logs gained); `pdrepro check OUT` judges them. Exit 0: "
            "every fault passed; 1: one failed; 2: bad input; 130/143: stopped by a signal: the fault it cut short is "
            "undone first (a stopped server resumed, a killed one started again and given a short wait for its "
            "health, which a second signal ends), and the partial run is kept, marked interrupted (it fails)."))
    p.add_argument("stack_run", type=Path, metavar="STACK_RUN", help="the folder `pdrepro stack up --out` wrote")
    p.add_argument("--fault", choices=(*FAULTS, "all"), required=True, help="which fault (all: the four in turn)")
    p.add_argument("--stop-seconds", type=float, default=10.0,
                   help="stop-decode: seconds between SIGSTOP and SIGCONT (default %(default)g)")
    p.add_argument("--requests", type=int, default=32, help="requests per fault (default %(default)s)")
    p.add_argument("--concurrency", type=int, default=4, help="requests in flight at most (default %(default)s)")
    p.add_argument("--client-timeout", type=float, default=60.0,
                   help="seconds a request may go without an answer before it counts as lost (default %(default)g)")
    p.add_argument("--prompt-tokens", type=int, default=1024,
                   help="prompt length of each request, tokens (default %(default)s)")
    p.add_argument("--new-tokens", type=int, default=32, help="tokens generated per request (default %(default)s)")
    p.add_argument("--recovery-bound", type=float, default=None,
                   help="seconds the router may take to answer again after a fault (default: the scenario's "
                        "thresholds.max_fault_recovery_s)")
    p.add_argument("--scenario", default=None,
                   help="scenario whose recovery bound applies (default: the one STACK_RUN/stack.json records)")
    p.add_argument("--out", type=Path, required=True, help="folder for fault-summary.json and fault-report.md")
    p.set_defaults(func=run)


def _positive(name: str, value: float, top: float) -> None:
    if not (math.isfinite(value) and 0 < value <= top):
        raise UserError(f"--{name} {value:g}: give a number above 0 and at most {top:g}")


def check_args(args: argparse.Namespace) -> None:
    _positive("stop-seconds", args.stop_seconds, 3600)
    _positive("client-timeout", args.client_timeout, 3600)
    for name, value, top in (("requests", args.requests, 100_000), ("concurrency", args.concurrency, 1024),
                             ("prompt-tokens", args.prompt_tokens, 1_000_000), ("new-tokens", args.new_tokens, 100_000)):
        if not 1 <= value <= top:
            raise UserError(f"--{name} {value}: give a whole number from 1 to {top}")
    if args.recovery_bound is not None:
        _positive("recovery-bound", args.recovery_bound, 3600)
    if args.out.exists() and not args.out.is_dir():
        raise UserError(f"--out {args.out}: is a file; give a folder for the fault run")


def bound(args: argparse.Namespace, recorded_scenario: str) -> tuple[float, str]:
    """The recovery bound and where it came from."""
    if args.recovery_bound is not None:
        return args.recovery_bound, "--recovery-bound"
    from ..scenario.model import load_scenario

    name = args.scenario or recorded_scenario
    try:
        scenario = load_scenario(name)
    except UserError as exc:
        raise UserError(f"the recovery bound: scenario {name!r} ({exc}); give --scenario or --recovery-bound") from None
    return scenario.thresholds.max_fault_recovery_s, f"scenario {scenario.name}'s thresholds.max_fault_recovery_s"


def run(args: argparse.Namespace) -> int:
    from ..core.exits import EXIT_FAILED
    from ..core.safewrite import make_folder
    from ..core.signals import exit_status, signal_name, stop_on_signals
    from ..launch.stack import lock
    from ..rundir import faultsummary, ownoutputs
    from ..sweep import faultplan, faultrun

    check_args(args)
    rec = faultrun.check_stack(args.stack_run)
    recovery, source = bound(args, rec.scenario)
    make_folder(args.out, "pdrepro fault")
    outputs = (faultsummary.FILE, faultsummary.REPORT)
    ownoutputs.refuse_foreign(args.out, outputs, "fault")
    faults = FAULTS if args.fault == "all" else (args.fault,)
    req = faultplan.FaultRequest(args.stack_run, faults, args.requests, args.concurrency, args.client_timeout,
                                 args.prompt_tokens, args.new_tokens, args.stop_seconds, recovery, source)
    summary = None
    try:
        # The stack's folder is held as `stack up` and `stack down` hold it: neither runs while its servers are hit.
        with lock.held(args.stack_run, "fault"), stop_on_signals():
            summary = faultplan.run_all(req, lambda s: _write(args.out, s))
    except KeyboardInterrupt as exc:
        if summary is None:
            raise  # stopped before any fault began: nothing hit, nothing to record
        # The fault cut short was undone already (faultrun); the partial run is written, marked interrupted.
        summary = summary.model_copy(update={"interrupted": summary.interrupted or signal_name(exc)})
        _write(args.out, summary)
        print(f"pdrepro fault: {interrupted_line(summary)}; partial run (not a PASS) in {faultsummary.path(args.out)}",
              file=sys.stderr, flush=True)
        return exit_status(exc)
    _write(args.out, summary)
    from ..kinds.fault import judge
    from ..report.fault import fault_table

    print(fault_table(summary))
    print(f"summary: {faultsummary.path(args.out)}\nreport:  {args.out / faultsummary.REPORT}")
    verdict = judge(summary)
    for line in verdict.lines:
        if line.startswith("FAIL"):
            print(line)
    return EXIT_FAILED if verdict.status else 0


def interrupted_line(summary) -> str:
    """What the signal stopped and what was restored (or what could not be, with the fix)."""
    cut = summary.faults[-1] if summary.faults and summary.faults[-1].interrupted else None
    if cut is None or cut.undo is None:
        return f"interrupted ({summary.interrupted}) outside a fault: nothing to restore"
    return f"interrupted ({summary.interrupted}) during {cut.fault}: {cut.undo.line}"


def _write(out: Path, summary) -> None:
    from ..report.fault import render
    from ..rundir import faultsummary, ownoutputs
    from ..rundir.contract import dumps_json

    ownoutputs.write_outputs(out, {faultsummary.FILE: dumps_json(summary.model_dump(mode="json"),
                                                                 faultsummary.path(out), indent=2),
                                   faultsummary.REPORT: render(summary)}, "fault")
