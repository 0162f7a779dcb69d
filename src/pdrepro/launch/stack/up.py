"""Start a one-box plan as host processes: prefill, then decode, then the router, each once the one
before answers, every child in its own session logging into the run, all recorded as they start."""

from __future__ import annotations

import logging
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from ...core.errors import UserError
from ...core.roles import SERVER_ROLES, Role
from ...rundir import RunDir
from ...scenario.launch_section import LAUNCH_ENV_TUNABLES
from ..plan import LaunchPlan
from . import procs, record
from .packages import Installed

log = logging.getLogger(__name__)

# Inherited variables the launch decides itself: a server gets them only from the plan, so an
# operator's stray MC_FORCE_TCP or CUDA_VISIBLE_DEVICES cannot change what runs behind the record's back.
PLAN_OWNED = ("MC_FORCE_TCP", "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "SGLANG_HOST_IP", "MOONCAKE_PROTOCOL",
              "WITH_NVIDIA_PEERMEM", *LAUNCH_ENV_TUNABLES)
# The launcher's own addition: logs that show each line when it is written.
LAUNCHER_ENV = {"PYTHONUNBUFFERED": "1"}
LOG_TAIL_LINES = 20


@dataclass(frozen=True)
class Step:
    name: str
    role: Role
    argv: tuple[str, ...]
    env: dict[str, str]
    log_name: str
    health_url: str
    ports: tuple[int, ...]


def steps(lp: LaunchPlan) -> list[Step]:
    """The plan's processes in their start order, each with the URL that says it is up."""
    out = [Step(s.name, Role(s.role), s.argv, dict(s.env), s.log_name, f"{s.url}/health",
                tuple(p for p in (s.port, s.bootstrap_port) if p is not None))
           for role in SERVER_ROLES for s in lp.servers if s.role == role]
    host = lp.servers[0].host
    out.append(Step("router", Role.ROUTER, lp.router_argv, {}, "router.log", f"http://{host}:{lp.router_port}/readiness",
                    (lp.router_port,)))
    return out


def child_env(step: Step, base: dict[str, str]) -> tuple[dict[str, str], dict[str, str], tuple[str, ...]]:
    """(the environment it runs with, what it adds to ``base``, inherited names it drops)."""
    removed = tuple(sorted(k for k in PLAN_OWNED if k in base and k not in step.env))
    added = {**step.env, **LAUNCHER_ENV}
    env = {k: v for k, v in base.items() if k not in removed}
    env.update(added)
    return env, added, removed


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def answers(url: str, timeout: float = 5.0) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return resp.status == 200
    except (urllib.error.URLError, OSError, ValueError):
        return False


def port_in_use(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(1.0)
        return s.connect_ex((host, port)) == 0


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
        self.children: list[tuple[record.Started, subprocess.Popen]] = []

    # ---- one process --------------------------------------------------------
    def start(self, step: Step, base_env: dict[str, str]) -> record.Started:
        env, added, removed = child_env(step, base_env)
        log_path = self.run.logs_dir / step.log_name
        self.run.logs_dir.mkdir(parents=True, exist_ok=True)
        with log_path.open("ab") as log_file:
            # The argv as rendered; the executable is its first word (this Python's full path).
            proc = subprocess.Popen(list(step.argv), stdin=subprocess.DEVNULL, stdout=log_file, stderr=subprocess.STDOUT,
                                    env=env, start_new_session=True, cwd=self.run.root)
        ticks = procs.start_ticks(proc.pid)
        if ticks is None:  # gone already, and reaped: -1 names no process, so nothing is ever signalled for it
            ticks = -1
        started = record.Started(name=step.name, role=step.role, pid=proc.pid, start_ticks=ticks, argv=step.argv,
                                 env=added, env_removed=removed, log=str(log_path.relative_to(self.run.root)),
                                 health_url=step.health_url, started_at=_now())
        self.children.append((started, proc))
        self._save()
        log.info(f"stack up: started {step.name} (pid {proc.pid}), log {log_path}")
        return started

    def wait_healthy(self, started: record.Started, proc: subprocess.Popen) -> float:
        t0 = time.monotonic()
        next_note = t0 + self.progress_every_s
        while True:
            if answers(started.health_url):
                return time.monotonic() - t0
            code = proc.poll()
            elapsed = time.monotonic() - t0
            if code is not None:
                raise StartFailed(f"{started.name} exited with code {code} while starting (after {elapsed:.0f} s)"
                                  + self._tail(started))
            if elapsed > self.start_budget_s:
                raise StartFailed(f"{started.name} did not answer {started.health_url} within {self.start_budget_s:.0f} s"
                                  + self._tail(started))
            if time.monotonic() >= next_note:
                log.info(f"stack up: waiting for {started.name} ({started.health_url}): {elapsed:.0f} s")
                next_note += self.progress_every_s
            time.sleep(self.poll_s)

    def _tail(self, started: record.Started) -> str:
        path = self.run.root / started.log
        try:
            lines = path.read_text(errors="replace").splitlines()[-LOG_TAIL_LINES:]
        except OSError:
            lines = []
        if not lines:
            return f"; its log {path} is empty"
        return f"; last {len(lines)} lines of {path}:\n" + "\n".join(f"    {line}" for line in lines)

    # ---- the whole stack ----------------------------------------------------
    def up(self, plan_steps: list[Step], base_env: dict[str, str]) -> None:
        for step in plan_steps:
            started = self.start(step, base_env)
            proc = self.children[-1][1]
            after = self.wait_healthy(started, proc)
            healthy = started.model_copy(update={"healthy_after_s": round(after, 1)})
            self.children[-1] = (healthy, proc)
            self._save()
            log.info(f"stack up: {step.name} healthy after {after:.0f} s")

    def stop_all(self) -> None:
        """Stop what this launcher started, last first."""
        for started, proc in reversed(self.children):
            what = procs.stop_group(started.pid, started.start_ticks, self.grace_s)
            proc.poll()  # reap it, so it is not left a zombie of this process
            log.info(f"stack up: {started.name} (pid {started.pid}) {what}")
        self.rec = self.rec.model_copy(update={"stopped_at": _now()})
        self._save()

    def _save(self) -> None:
        self.rec = self.rec.model_copy(update={"processes": tuple(s for s, _ in self.children)})
        record.save(self.run.root, self.rec)


def check_free(plan_steps: list[Step], host: str) -> None:
    for step in plan_steps:
        for port in step.ports:
            if port_in_use(host, port):
                raise UserError(f"port {port} ({step.name}) on {host} is in use already; stop what listens there "
                                "(another stack? `pdrepro stack status RUN`) or change the scenario's launch.ports")


def check_no_live_stack(run: Path) -> None:
    if not record.path(run).is_file():
        return
    try:
        old = record.read(run)
    except UserError:
        return  # unreadable: nothing to stop through it, it will be replaced
    if old.boot_id != procs.boot_id():
        return
    alive = [p for p in old.processes if procs.running(p.pid, p.start_ticks)]
    if alive:
        raise UserError(f"{run} holds a running stack ({alive[0].name}, pid {alive[0].pid}); "
                        f"stop it first: pdrepro stack down {run}")


def new_record(scenario: str, python: str, installed: Installed) -> record.StackRecord:
    return record.StackRecord(scenario=scenario, boot_id=procs.boot_id(), python=python,
                              python_version=installed.python_version, packages=installed.versions,
                              modules=installed.modules)


def interrupt_on_sigterm():
    """SIGTERM during `stack up` unwinds like Ctrl-C, so what was started is stopped; returns the old handler."""
    def handler(signum, frame):
        raise KeyboardInterrupt
    return signal.signal(signal.SIGTERM, handler)


def base_environment() -> dict[str, str]:
    return dict(os.environ)
