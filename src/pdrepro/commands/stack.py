"""``pdrepro stack up|down|status``: the one-box launch started on this host with this Python
(no image, no compose), recorded in the run directory, stopped exactly as it was started."""

from __future__ import annotations

import argparse
import dataclasses
import logging
import math
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn
from urllib.parse import urlsplit

from .. import backends, engines
from ..core import advice, signals
from ..core.errors import UserError

# The site's defaults and the stack kinds only: the launcher, its record and the scenario (pydantic, YAML) are
# imported where a verb runs, so that building the command line (`pdrepro --help`) stays light.
from ..launch import site as launch
from ..launch.stack.kinds import STACK_KINDS
from ..launch.stack.request import DEFAULT_SCENARIO
from .render import add_site_options, onebox_plan, server_arg_words, transfer_backend
from .render import register as register_render

if TYPE_CHECKING:
    from ..launch.stack import up as launcher
    from ..launch.stack.nodes import NodeAsk
    from ..launch.stack.request import StackUpRequest
    from ..rundir import RunDir
    from ..tune.grid import Route

log = logging.getLogger(__name__)

HELP = "start, stop or show a one-box stack as processes of this host (the host launcher)"
EXIT_START_FAILED = 1
# The render whose output `stack up` starts, word for word (site options as given to `stack up`).
RENDER = f"pdrepro render --target onebox --launcher host --scenario {DEFAULT_SCENARIO}"
NO_SCENARIO = "The scenario is the one RUN/stack.json records (no default)."
PROOF = ("A process is this stack's only when /proc shows the start time, the PDREPRO_STACK_ID marker and the "
         "command line the record holds; anything else is named and left alone (exit 2).")
# Seconds options: each must be a number above 0 (a zero poll spins, a negative timeout never waits).
SECONDS_OPTIONS = ("start_timeout", "poll", "progress_every", "grace")


class _WholeWords(argparse.HelpFormatter):
    """Wraps help at spaces only, so a command quoted in it (a scenario name holds hyphens) stays one piece."""

    def _split_lines(self, text, width):
        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)

    def _fill_text(self, text, width, indent):
        return textwrap.fill(" ".join(text.split()), width, initial_indent=indent, subsequent_indent=indent,
                             break_on_hyphens=False)


def register(subparsers) -> None:
    p = subparsers.add_parser("stack", help=HELP, description=HELP[0].upper() + HELP[1:] + ".")
    verbs = p.add_subparsers(dest="verb", metavar="VERB", required=True)
    u = verbs.add_parser("up", help="start prefill, decode and router, each once the one before is up "
                                    f"(default scenario {DEFAULT_SCENARIO})",
                         description=f"Start what `{RENDER}` prints (with --scenario and the site options given "
                                     "here in its place): prefill server(s), then decode, then the router, each "
                                     "after the one before is up, with the Python running pdrepro. Up means: it "
                                     "answers /health (/readiness), the process this command spawned (or one it "
                                     "forked) holds the port's listening socket, and a server's /get_server_info "
                                     "names the model and port it was given. Logs go to RUN/logs, what was "
                                     "started to RUN/stack.json, written before each spawn. One `stack up` at a "
                                     f"time per folder. Default scenario: {DEFAULT_SCENARIO}.",
                         formatter_class=_WholeWords)
    u.add_argument("--target", choices=("onebox",), default="onebox", help="only the one-box plan runs on one host")
    u.add_argument("--launcher", choices=("host",), default="host", help="processes of this host (default)")
    u.add_argument("--scenario", default=DEFAULT_SCENARIO,
                   help="shipped scenario name or path to a scenario YAML (default %(default)s)")
    u.add_argument("--stack", choices=STACK_KINDS, default=STACK_KINDS[0],
                   help="which of the scenario's stacks to start: disaggregated (prefill, decode, router) or, for a "
                        "comparison scenario, regular (two regular servers, then the router with --worker-urls; "
                        "on one GPU each takes its --mem-fraction-static, one after the other) (default %(default)s)")
    u.add_argument("--prefill-ip", help="this host's address, advertised by both servers (default 127.0.0.1)")
    add_site_options(u, host=True)
    u.add_argument("--start-timeout", type=float, default=float(launch.SERVER_START_SECONDS),
                   help="seconds each server may take to come up, above 0 (default %(default).0f)")
    u.add_argument("--poll", type=float, default=1.0, help="seconds between checks, above 0 (default %(default).0f)")
    u.add_argument("--progress-every", type=float, default=10.0,
                   help="seconds between the lines saying what it waits for, above 0 (default %(default).0f)")
    u.add_argument("--grace", type=float, default=30.0,
                   help="seconds between SIGTERM and SIGKILL when stopping, above 0 (default %(default).0f)")
    u.add_argument("--sysfs-root", type=Path, default=Path("/sys"), metavar="DIR",
                   help="the sysfs tree the node records (RUN/nodes/ROLE.json) are read from: /sys, or a captured "
                        "copy of it, as `pdrepro doctor --sysfs-root` reads (default %(default)s)")
    u.add_argument("--out", type=Path, required=True, help="the run directory (logs/, stack.json, nodes/)")
    # The render options a one-box host launch does not take, at the values render gives them.
    u.set_defaults(func=run_up, decode_ip=None, ib_devices=None, log_dir=launch.DEFAULT_LOG_DIR,
                   memlock=launch.MEMLOCK_UNLIMITED)
    d = verbs.add_parser("down", help="stop exactly the processes `stack up` started in RUN",
                         description=f"Stop the processes `stack up` started in RUN, and those they forked. {PROOF} "
                                     f"{NO_SCENARIO}")
    d.add_argument("run", type=Path, metavar="RUN")
    d.add_argument("--grace", type=float, default=30.0,
                   help="seconds between SIGTERM and SIGKILL, above 0 (default %(default).0f)")
    d.set_defaults(func=run_down)
    s = verbs.add_parser("status", help="say which of RUN's processes run and answer their health URL",
                         description=f"Say which of RUN's processes run, are this stack's, hold their port and "
                                     f"answer their health URL; exit 0 when all do, 1 when not. {PROOF} "
                                     f"{NO_SCENARIO}")
    s.add_argument("run", type=Path, metavar="RUN")
    s.set_defaults(func=run_status)


def _check_seconds(args) -> None:
    for name in SECONDS_OPTIONS:
        value = getattr(args, name, None)
        if value is not None and not (math.isfinite(value) and value > 0):
            raise UserError(f"--{name.replace('_', '-')} {value:g}: give a number of seconds above 0")


def _one_gpu_box(args: StackUpRequest) -> StackUpRequest:
    """A box with one GPU shares it unless --gpus says otherwise."""
    if args.gpus is not None:
        return args
    try:
        from ..host.nvidia import query_gpus

        if len(query_gpus()) == 1:
            return dataclasses.replace(args, gpus="0")
    except Exception:  # no nvidia-smi, or it failed: the default placement stands, as in render
        pass
    return args


def run_up(given) -> int:
    """`stack up` of ``given``: its parsed command line, or a runner's typed request (launch.stack.request)."""
    from ..launch.stack import lock, regular
    from ..launch.stack import up as launcher
    from ..launch.stack.request import StackUpRequest
    from ..rundir import RunDir
    from ..scenario.model import load_scenario

    args = StackUpRequest.from_args(given)
    _check_seconds(args)
    scenario = load_scenario(args.scenario)
    args = _one_gpu_box(args)
    plan = onebox_plan(args, scenario, python=sys.executable)
    lp = plan.launch_plan()  # the engine and backend the stack's packages are probed for
    plan_steps = regular.steps(plan) if args.stack == "regular" else launcher.steps(lp)
    run = RunDir(args.out)
    try:
        run.root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"--out {args.out}: cannot create it ({exc.strerror}); choose a writable folder") from None
    with lock.held(run.root, "up"):
        return _up_locked(args, run, lp, plan_steps, scenario)


def _node_ask(args: StackUpRequest, lp, scenario) -> NodeAsk | None:
    """What the node records are read against; None for a regular stack (no prefill or decode server to record)."""
    from ..launch.stack.nodes import NodeAsk

    gpus: dict[str, tuple[int, ...]] = {}
    for server in lp.servers:
        if server.role in ("prefill", "decode"):
            gpus[server.role] = tuple(sorted({*gpus.get(server.role, ()), *server.gpus}))
    if args.stack != "disaggregated" or not gpus:
        return None
    return NodeAsk(scenario=scenario, gpus=gpus, sysfs_root=Path(args.sysfs_root),
                   model=Path(args.model) if args.model else None, dataset=Path(args.dataset) if args.dataset else None,
                   advertise_ip=lp.servers[0].host, python=sys.executable)


def _up_locked(args, run: RunDir, lp, plan_steps: list[launcher.Step], scenario_model) -> int:
    from ..launch.stack import nodes, record
    from ..launch.stack import up as launcher
    from ..launch.stack.packages import probe

    scenario = scenario_model.name
    launcher.check_no_live_stack(run.root)
    base = launcher.base_environment()
    installed = probe(sys.executable, launcher.child_env(plan_steps[0], base)[0], engines.engine(lp.engine),
                      backends.backend(lp.backend))
    print(f"stack up: {installed.line()} ({sys.executable})", flush=True)
    for line in lp.server_arg_overrides:
        print(f"stack up: --server-arg overrides the scenario's flag {line}", flush=True)
    router = plan_steps[-1]
    host = urlsplit(router.health_url).hostname or "127.0.0.1"
    launcher.check_free(plan_steps, host)
    ask = _node_ask(args, lp, scenario_model)
    if ask is not None:  # before the servers start: the ports they will hold are checked free, as on a cluster node
        nodes.record(run.root, ask, lambda line: print(line, flush=True))
    starter = launcher.Launcher(run, launcher.new_record(scenario, sys.executable, installed, lp, args.stack),
                                start_budget_s=args.start_timeout, poll_s=args.poll, grace_s=args.grace,
                                progress_every_s=args.progress_every)
    with signals.unwinding():
        try:
            starter.up(plan_steps, base)
        except launcher.StartFailed as exc:
            signals.ignore_more()
            print(f"pdrepro stack: {exc}", file=sys.stderr, flush=True)
            _refuse(starter.stop_all(), run.root)
            return EXIT_START_FAILED
        except KeyboardInterrupt:
            signals.ignore_more()
            log.info("stack up: interrupted; stopping what was started")
            starter.stop_all()
            raise
        except BaseException:
            signals.ignore_more()
            starter.stop_all()
            raise
    names = ", ".join(step.name for step in plan_steps)
    log.info(f"stack up: {names} run ({args.stack} stack); router at http://{host}:{router.port}; "
             f"record {record.path(run.root)}; stop with: {advice.stack_down(run.root)}")
    return 0


def _refuse(refused: list[str], run: Path) -> None:
    from ..launch.stack import record

    if refused:
        raise UserError(f"{record.path(run)} names processes that are not this stack's, left alone: "
                        + "; ".join(refused))


def run_down(given) -> int:
    """`stack down` of ``given``: its parsed command line, or a runner's typed request (launch.stack.request)."""
    from ..launch.stack import lock, ownership, procs, record
    from ..launch.stack import up as launcher
    from ..launch.stack.request import StackDownRequest

    args = StackDownRequest.from_args(given)

    if not (math.isfinite(args.grace) and args.grace > 0):
        raise UserError(f"--grace {args.grace:g}: give a number of seconds above 0")
    record.read(args.run)  # a folder without a record is refused before it is locked
    with lock.held(args.run, "down"):
        rec = record.read(args.run)  # as it is now that no `stack up` can change it
        if rec.boot_id != ownership.boot_id():
            print(f"stack down: {args.run} was started before this host last booted; nothing of it runs")
            return 0
        refused = procs.take_down(rec, args.grace, lambda line: print(f"stack down: {line}", flush=True))
        _refuse([f.line() for f in refused], args.run)
        if rec.stopped_at is None:
            record.save(args.run, rec.model_copy(update={"stopped_at": launcher._now()}))
    return 0


def run_status(args) -> int:
    from ..launch.stack import proof, ready, record

    rec = record.read(args.run)
    survey = proof.survey(rec)
    all_up = bool(rec.processes)
    print(f"stack {args.run}: scenario {rec.scenario} ({rec.stack}), {rec.python} (Python {rec.python_version})"
          + (f", stopped at {rec.stopped_at}" if rec.stopped_at else ""))
    for p, f in zip(rec.processes, survey.recorded):
        healthy = (f.ours and p.port is not None and rec.stack_id is not None
                   and ready.answers(p.health_url, timeout=3.0) and bool(ready.holders(p.port, rec.stack_id)))
        all_up = all_up and healthy
        state = {proof.OURS: "running", proof.GONE: "not running", proof.UNPROVEN: "not ours"}[f.verdict]
        health = "healthy" if healthy else ("not healthy" if f.ours else "-")
        print(f"  {p.name:<10} pid {p.pid!s:<8} {state:<12} {health:<12} {p.health_url}  log {p.log}")
    forked = [f for f in survey.strays if f.ours]
    if forked:
        print(f"  and {len(forked)} process(es) the servers forked: "
              + ", ".join(f"{f.name} (pid {f.pid})" for f in forked))
    _refuse([f.line() for f in survey.refused], args.run)
    return 0 if all_up else 1


# ---- what composite commands hand `stack up` -------------------------------------------------------
# A composite command (tune, ab) reads its server flags and `--stack-args` before anything starts: --stack-args
# through this parser (an abbreviation or a repeated option means here what it will mean in the arm), the
# server flags of every route checked by meaning (scenario.serverflags).

_PLACEHOLDER_OUT = "/nonexistent/pdrepro-stack-args"


class _Refusing(argparse.ArgumentParser):
    """`stack up`'s (or `render`'s) parser, whose complaints become one line naming --stack-args."""

    verb = ""  # the command the words are handed to, for a complaint of the top parser (an unknown flag)

    def error(self, message: str) -> NoReturn:
        verb = " ".join(self.prog.split()[1:]) or self.verb
        raise UserError(f"--stack-args: {message}; give flags `pdrepro {verb}` takes")


@dataclass(frozen=True)
class StackWords:
    routes: tuple[Route, ...]      # the server flags of --server-arg and of --stack-args, each with its place
    backend: str | None            # the transfer backend --stack-args picks (None: the scenario's)
    backend_source: str | None


def _parsed(words: tuple[str, ...], render_target: str | None) -> argparse.Namespace:
    """``words`` as the command they are handed to reads them: `stack up` on one box, `render` for a cluster."""
    parser = _Refusing(prog="pdrepro", add_help=False)
    parser.verb = "stack up" if render_target is None else "render"
    verbs = parser.add_subparsers(dest="command")
    if render_target is None:
        register(verbs)
        return parser.parse_args(["stack", "up", "--out", _PLACEHOLDER_OUT, *words])
    register_render(verbs)
    return parser.parse_args(["render", "--target", render_target, *words])


def read_words(server_args: list[str], stack_words: tuple[str, ...], render_target: str | None = None) -> StackWords:
    """The routes server flags take besides the scenario, and the backend the stack really runs."""
    from ..tune.grid import Route

    routes: list[Route] = []
    for value in server_args:
        routes.append(Route(f"--server-arg {value!r}", server_arg_words([value])))
    given = _parsed(stack_words, render_target)
    for value in given.server_arg:
        routes.append(Route(f"--stack-args' --server-arg {value!r}", server_arg_words([value])))
    backend = transfer_backend(given)
    return StackWords(tuple(routes), backend, "--stack-args' --transfer-backend" if backend else None)


def check_words(found: StackWords, engine: str) -> None:
    """Each route's flags ones the server takes and the launch plan does not set itself (one line, exit 2)."""
    from ..scenario import serverflags

    owned = serverflags.plan_owned(engine)
    for route in found.routes:
        serverflags.check_words(route.words, route.place, engine, owned,
                                "drop it: the scenario and the site options set it")
