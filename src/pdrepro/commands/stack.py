"""``pdrepro stack up|down|status``: the one-box launch started on this host with this Python
(no image, no compose), recorded in the run directory, stopped exactly as it was started."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

from ..core.errors import UserError
from ..launch import plan as launch
from ..launch.stack import procs, record
from ..launch.stack import up as launcher
from ..launch.stack.packages import probe
from ..rundir import RunDir
from ..scenario.model import load_scenario
from .render import add_site_options, onebox_plan

log = logging.getLogger(__name__)

HELP = "start, stop or show a one-box stack as processes of this host (the host launcher)"
EXIT_START_FAILED = 1


def register(subparsers) -> None:
    p = subparsers.add_parser("stack", help=HELP, description=HELP[0].upper() + HELP[1:] + ".")
    verbs = p.add_subparsers(dest="verb", metavar="VERB", required=True)
    u = verbs.add_parser("up", help="start prefill, decode and router, each once the one before is healthy",
                         description="Start the plan `pdrepro render --target onebox --launcher host` prints: prefill "
                                     "server(s), then decode, then the router, each after the one before answers "
                                     "/health (/readiness), with the Python running pdrepro. Logs go to RUN/logs, what "
                                     "was started to RUN/stack.json.")
    u.add_argument("--target", choices=("onebox",), default="onebox", help="only the one-box plan runs on one host")
    u.add_argument("--launcher", choices=("host",), default="host", help="processes of this host (default)")
    u.add_argument("--scenario", default="onebox-qwen25-0.5b",
                   help="shipped scenario name or path to a scenario YAML (default %(default)s)")
    u.add_argument("--prefill-ip", help="this host's address, advertised by both servers (default 127.0.0.1)")
    add_site_options(u)
    u.add_argument("--start-timeout", type=float, default=float(launch.SERVER_START_SECONDS),
                   help="seconds each server may take to answer (default %(default).0f)")
    u.add_argument("--poll", type=float, default=1.0, help="seconds between health checks (default %(default).0f)")
    u.add_argument("--progress-every", type=float, default=10.0,
                   help="seconds between the lines saying what it waits for (default %(default).0f)")
    u.add_argument("--grace", type=float, default=30.0, help="seconds between SIGTERM and SIGKILL when stopping")
    u.add_argument("--out", type=Path, required=True, help="the run directory (logs/, stack.json)")
    # The render options a one-box host launch does not take, at the values render gives them.
    u.set_defaults(func=run_up, decode_ip=None, ib_devices=None, log_dir=launch.DEFAULT_LOG_DIR,
                   memlock=launch.MEMLOCK_UNLIMITED)
    d = verbs.add_parser("down", help="stop exactly the processes `stack up` started in RUN")
    d.add_argument("run", type=Path, metavar="RUN")
    d.add_argument("--grace", type=float, default=30.0, help="seconds between SIGTERM and SIGKILL (default %(default).0f)")
    d.set_defaults(func=run_down)
    s = verbs.add_parser("status", help="say which of RUN's processes run and answer their health URL")
    s.add_argument("run", type=Path, metavar="RUN")
    s.set_defaults(func=run_status)


def _one_gpu_box(args) -> None:
    """A box with one GPU shares it unless --gpus says otherwise."""
    if args.gpus is not None:
        return
    try:
        from ..host.nvidia import query_gpus

        if len(query_gpus()) == 1:
            args.gpus = "0"
    except Exception:  # no nvidia-smi, or it failed: the default placement stands, as in render
        pass


def run_up(args) -> int:
    scenario = load_scenario(args.scenario)
    _one_gpu_box(args)
    plan = onebox_plan(args, scenario, python=sys.executable)
    lp = plan.launch_plan()
    plan_steps = launcher.steps(lp)
    run = RunDir(args.out)
    try:
        run.root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"--out {args.out}: cannot create it ({exc.strerror}); choose a writable folder") from None
    launcher.check_no_live_stack(run.root)
    base = launcher.base_environment()
    installed = probe(sys.executable, launcher.child_env(plan_steps[0], base)[0])
    print(f"stack up: {installed.line()} ({sys.executable})", flush=True)
    host = lp.servers[0].host
    launcher.check_free(plan_steps, host)
    starter = launcher.Launcher(run, launcher.new_record(scenario.name, sys.executable, installed),
                                start_budget_s=args.start_timeout, poll_s=args.poll, grace_s=args.grace,
                                progress_every_s=args.progress_every)
    previous = launcher.interrupt_on_sigterm()
    try:
        starter.up(plan_steps, base)
    except launcher.StartFailed as exc:
        print(f"pdrepro stack: {exc}", file=sys.stderr, flush=True)
        starter.stop_all()
        return EXIT_START_FAILED
    except KeyboardInterrupt:
        log.info("stack up: interrupted; stopping what was started")
        starter.stop_all()
        return 130
    finally:
        launcher.signal.signal(launcher.signal.SIGTERM, previous)
    log.info(f"stack up: prefill, decode and router run; router at http://{host}:{lp.router_port}; "
        f"record {record.path(run.root)}; stop with: pdrepro stack down {run.root}")
    return 0


def run_down(args) -> int:
    rec = record.read(args.run)
    if rec.boot_id != procs.boot_id():
        print(f"stack down: {args.run} was started before this host last booted; nothing of it runs")
        return 0
    for p in reversed(rec.processes):
        print(f"stack down: {p.name} (pid {p.pid}) {procs.stop_group(p.pid, p.start_ticks, args.grace)}", flush=True)
    if rec.stopped_at is None:
        record.save(args.run, rec.model_copy(update={"stopped_at": launcher._now()}))
    return 0


def run_status(args) -> int:
    rec = record.read(args.run)
    same_boot = rec.boot_id == procs.boot_id()
    all_up = bool(rec.processes)
    print(f"stack {args.run}: scenario {rec.scenario}, {rec.python} (Python {rec.python_version})"
          + (f", stopped at {rec.stopped_at}" if rec.stopped_at else ""))
    for p in rec.processes:
        alive = same_boot and procs.running(p.pid, p.start_ticks)
        healthy = alive and launcher.answers(p.health_url, timeout=3.0)
        all_up = all_up and healthy
        state = "running" if alive else "not running"
        health = "healthy" if healthy else ("not healthy" if alive else "-")
        print(f"  {p.name:<10} pid {p.pid:<8} {state:<12} {health:<12} {p.health_url}  log {p.log}")
    return 0 if all_up else 1
