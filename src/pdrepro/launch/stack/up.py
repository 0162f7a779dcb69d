"""Start a one-box plan as host processes: prefill, then decode, then the router, each once the one
before answers, every child in its own session logging into the run, all recorded as they start."""

from __future__ import annotations

import collections
import logging
import os
import secrets
import socket
import subprocess
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from ... import backends, engines
from ...core import advice, runfile, safewrite, signals
from ...core.errors import UserError
from ...core.roles import SERVER_ROLES, Role
from ...rundir import RunDir
from ...scenario import launch_env
from ..plan import LaunchPlan
from . import ownership, procs, proof, ready, record
from .packages import Installed

log = logging.getLogger(__name__)

# Inherited variables the launch decides itself: a server gets them only from the plan, so an operator's
# stray backend switch, GPU list or tunable cannot change what runs behind the record's back. Every
# engine's and backend's own variables count, not only the chosen ones' (a stray one of another backend
# would be read by nothing today, and by the wrong arm of an A/B tomorrow).
def plan_owned(key: str) -> bool:
    engine_list = [engines.engine(n) for n in engines.names()]
    backend_list = [backends.backend(n) for n in backends.names()]
    if any(key in launch_env.plan_owned(e) for e in engine_list) or key in launch_env.SHARED_TUNABLES:
        return True
    if any(key in b.required_env for b in backend_list):
        return True
    prefixes = [p for e in engine_list for p in e.env_prefixes] + [p for b in backend_list for p in b.env_prefixes]
    return key.startswith(tuple(prefixes))


# The launcher's own additions: logs that show each line when it is written, and SPT_NOENV, which keeps
# setproctitle (SGLang's children retitle themselves with it) from overwriting /proc/PID/environ, where
# the stack id that proves a child ours is read.
LAUNCHER_ENV = {"PYTHONUNBUFFERED": "1", "SPT_NOENV": "1"}
LOG_TAIL_LINES = 20


@dataclass(frozen=True)
class Step:
    name: str
    role: Role
    argv: tuple[str, ...]
    env: dict[str, str]
    log_name: str
    health_url: str
    port: int                       # the port it serves on and must hold
    ports: tuple[int, ...]          # every port it opens (a prefill's bootstrap port too)
    info_url: str | None = None     # a server's /get_server_info; the router has none of its own


def steps(lp: LaunchPlan) -> list[Step]:
    """The plan's processes in their start order, each with the URL that says it is up (the engine's paths:
    a server's last, which generates no token; the router's first, which needs its workers)."""
    engine = engines.engine(lp.engine)
    worker, router = engine.worker_health_paths[-1], engine.router_health_paths[0]
    out = [Step(s.name, Role(s.role), s.argv, dict(s.env), s.log_name, f"{s.url}{worker}", s.port,
                tuple(p for p in (s.port, s.bootstrap_port) if p is not None), f"{s.url}{engine.info_path}")
           for role in SERVER_ROLES for s in lp.servers if s.role == role]
    host = lp.servers[0].host
    out.append(Step("router", Role.ROUTER, lp.router_argv, {}, "router.log", f"http://{host}:{lp.router_port}{router}",
                    lp.router_port, (lp.router_port,)))
    return out


def child_env(step: Step, base: dict[str, str]) -> tuple[dict[str, str], dict[str, str], tuple[str, ...]]:
    """(the environment it runs with, what it adds to ``base``, inherited names it drops)."""
    removed = tuple(sorted(k for k in base if plan_owned(k) and k not in step.env))
    added = {**step.env, **LAUNCHER_ENV}
    env = {k: v for k, v in base.items() if k not in removed}
    env.update(added)
    return env, added, removed


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def port_in_use(host: str, port: int) -> bool:
    """Something listens on ``port``: a connection is taken, or /proc shows a listening socket."""
    if ownership.listening_inodes(port):
        return True
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(1.0)
        return s.connect_ex((host, port)) == 0


def _open_log(path: Path) -> int:
    """The log, appended to (the child writes into it as it runs); never through a link planted in the run,
    which would write where it points. The caller closes the descriptor it gets."""
    with safewrite.open_log(path, "pdrepro stack up", append=True) as f:
        return os.dup(f.fileno())


class StartFailed(Exception):
    """A process ended or stayed unhealthy while starting; the message says which, with its log's tail."""


@dataclass
class Launcher:
    run: RunDir
    rec: record.StackRecord
    start_budget_s: float
    poll_s: float = 1.0
    progress_every_s: float = 10.0
    grace_s: float = 30.0

    def __post_init__(self) -> None:
        assert self.rec.stack_id is not None, "a new record always has its stack id"
        self.stack_id: str = self.rec.stack_id
        self.entries: list[record.Started] = []
        self.popens: list[subprocess.Popen] = []

    # ---- one process --------------------------------------------------------
    def start(self, step: Step, base_env: dict[str, str]) -> subprocess.Popen:
        env, added, removed = child_env(step, base_env)
        env[ownership.MARKER] = self.stack_id
        log_path = self.run.logs_dir / step.log_name
        self.run.logs_dir.mkdir(parents=True, exist_ok=True)
        entry = record.Started(name=step.name, role=step.role, port=step.port, argv=step.argv, env=added,
                               env_removed=removed, log=str(log_path.relative_to(self.run.root)),
                               health_url=step.health_url, started_at=_now())
        # The entry is on disk before the child exists and completed right after it, with signals held back
        # in between: at no moment does a child run that the record (its entry, or its stack id) does not name.
        # A restart (`pdrepro fault`) takes the place of its role's entry, so the record names one process per role.
        at = next((i for i, e in enumerate(self.entries) if e.name == step.name), len(self.entries))
        with signals.deferred():
            self.entries[at:at + 1] = [entry]
            self._save()
            log_fd = _open_log(log_path)
            try:
                # The argv as rendered; the executable is its first word (this Python's full path).
                proc = subprocess.Popen(list(step.argv), stdin=subprocess.DEVNULL, stdout=log_fd,
                                        stderr=subprocess.STDOUT, env=env, start_new_session=True, cwd=self.run.root,
                                        preexec_fn=signals.unblock_in_child)
            finally:
                os.close(log_fd)
            self.popens.append(proc)
            # None: it has ended already; the record then names a pid that no signal is ever sent to.
            ticks = ownership.start_ticks(proc.pid)
            self.entries[at] = entry.model_copy(update={"pid": proc.pid, "start_ticks": ticks})
            self._save()
        log.info(f"stack up: started {step.name} (pid {proc.pid}), log {log_path}")
        return proc

    def _check(self, step: Step, proc: subprocess.Popen) -> ready.Check:
        code = proc.poll()
        if code is not None:
            return ready.Check(False, True, f"exited with code {code}")
        return ready.check(step.health_url, step.info_url, step.argv, step.port, self.stack_id)

    def wait_up(self, step: Step, proc: subprocess.Popen) -> float:
        t0 = time.monotonic()
        next_note = t0 + self.progress_every_s
        while True:
            state = self._check(step, proc)
            elapsed = time.monotonic() - t0
            if state.up:
                return elapsed
            if state.final:
                raise StartFailed(f"{step.name} {state.why} while starting (after {elapsed:.0f} s)"
                                  + self._tail(step.name))
            if elapsed > self.start_budget_s:
                raise StartFailed(f"{step.name} did not come up within {self.start_budget_s:g} s: {state.why}"
                                  + self._tail(step.name))
            if time.monotonic() >= next_note:
                log.info(f"stack up: waiting for {step.name} ({step.health_url}): {elapsed:.0f} s")
                next_note += self.progress_every_s
            time.sleep(self.poll_s)

    @staticmethod
    def _title(step: Step, proc: subprocess.Popen) -> tuple[str, ...] | None:
        """The command line the child shows now, if it renamed itself: read only while ``proc`` is alive
        and not reaped, so the pid cannot name another process."""
        seen = ownership.cmdline(proc.pid)
        if proc.poll() is not None or seen is None or seen == step.argv:
            return None
        return seen

    def recheck(self, done: list[Step], after: str) -> None:
        """Each server started so far is still up (a later one can take its port or its GPU memory)."""
        for step, proc in zip(done, self.popens):
            state = self._check(step, proc)
            if not state.up:
                raise StartFailed(f"{step.name} is no longer up {after}: it {state.why}" + self._tail(step.name))

    def _tail(self, name: str) -> str:
        entry = next(e for e in self.entries if e.name == name)
        path = self.run.root / entry.log
        try:
            # Streamed: a server log may be hundreds of MB, and only its last lines are shown.
            lines = [line.rstrip("\r\n") for line in collections.deque(runfile.lines(path), maxlen=LOG_TAIL_LINES)]
        except (OSError, UserError):
            lines = []
        if not lines:
            return f"; its log {path} is empty"
        return f"; last {len(lines)} lines of {path}:\n" + "\n".join(f"    {line}" for line in lines)

    # ---- the whole stack ----------------------------------------------------
    def up(self, plan_steps: list[Step], base_env: dict[str, str]) -> None:
        for i, step in enumerate(plan_steps):
            proc = self.start(step, base_env)
            after = self.wait_up(step, proc)
            self.entries[-1] = self.entries[-1].model_copy(update={"healthy_after_s": round(after, 1),
                                                                   "title": self._title(step, proc)})
            with signals.deferred():
                self._save()
            log.info(f"stack up: {step.name} healthy after {after:.0f} s")
            self.recheck(plan_steps[:i], f"after {step.name} started")
        self.recheck(plan_steps, "at the end of the start")

    def stop_all(self) -> list[str]:
        """Stop what this launcher started (proven as `stack down` proves it), last first; returns the
        lines naming processes the record names that are not ours (none, unless the record was changed)."""
        refused = procs.take_down(self.rec, self.grace_s, lambda line: log.info(f"stack up: {line}"))
        for proc in self.popens:
            proc.poll()  # reap it, so it is not left a zombie of this process
        self.rec = self.rec.model_copy(update={"stopped_at": _now()})
        record.save(self.run.root, self.rec)
        return [f.line() for f in refused]

    def _save(self) -> None:
        self.rec = self.rec.model_copy(update={"processes": tuple(self.entries)})
        record.save(self.run.root, self.rec)


def check_free(plan_steps: list[Step], host: str) -> None:
    for step in plan_steps:
        for port in step.ports:
            if port_in_use(host, port):
                raise UserError(f"port {port} ({step.name}) on {host} is in use already; free it or change the "
                                "scenario's launch.ports (`pdrepro stack status RUN` says whether a stack of yours holds it)")


def check_no_live_stack(run: Path) -> None:
    """A folder whose record names a running stack is not started over; the advice names only what
    the proof says is ours."""
    if not record.path(run).is_file():
        return
    try:
        old = record.read(run)
    except UserError:
        return  # unreadable: nothing is signalled through it, and it will be replaced
    survey = proof.survey(old)
    if survey.refused:
        f = survey.refused[0]
        raise UserError(f"{record.path(run)} names {f.line()}; this record cannot be trusted: move it away "
                        "or choose another --out")
    if survey.targets:
        f = survey.targets[0]
        raise UserError(f"{run} holds a running stack ({f.name}, pid {f.pid}); stop it first: {advice.stack_down(run)}")


def new_record(scenario: str, python: str, installed: Installed, lp: LaunchPlan | None = None,
               stack: record.StackKind = "disaggregated") -> record.StackRecord:
    # A regular stack moves no KV between servers: its record names no transfer backend.
    backend = lp.backend if lp is not None and stack == "disaggregated" else None
    return record.StackRecord(scenario=scenario, stack_id=secrets.token_hex(16), boot_id=ownership.boot_id(),
                              python=python, python_version=installed.python_version, packages=installed.versions,
                              modules=installed.modules, engine=lp.engine if lp else None,
                              transfer_backend=backend, stack=stack,
                              server_arg_overrides=lp.server_arg_overrides if lp is not None else ())


def base_environment() -> dict[str, str]:
    # A stack id inherited from a stack this command runs inside of is not this launch's.
    return {k: v for k, v in os.environ.items() if k != ownership.MARKER}
