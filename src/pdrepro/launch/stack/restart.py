"""What `pdrepro fault` does to one role of a running host stack: find the role's processes the record proves
ours (the recorded server and what it forked), signal exactly those, and start the role again through the
launcher with the command the record holds for it.

Every signal goes through ``procs.send`` (a pidfd opened, then the process proven again), so a pid that ended
and was handed to another process is never signalled; a role whose recorded process fails the proof is refused
before anything is sent."""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass

from ...core import signals
from ...core.errors import UserError
from ...rundir import RunDir
from . import ownership, procs, proof, ready, record
from .up import LAUNCHER_ENV, Launcher, Step, base_environment


@dataclass(frozen=True)
class Role:
    """One recorded process of the stack, proven ours, and the processes it forked (proven by the marker)."""

    entry: record.Started
    leader: proof.Finding
    forked: tuple[proof.Finding, ...]

    @property
    def all(self) -> list[proof.Finding]:
        return [self.leader, *self.forked]

    def names(self) -> list[str]:
        return [f"{f.name} (pid {f.pid})" for f in self.all]


def _descends(pid: int, leader: int) -> bool:
    st = ownership.stat(pid)
    return st is not None and (st.pgid == leader or leader in ownership.ancestors(pid))


def role(rec: record.StackRecord, name: str) -> Role:
    """The process ``name`` of the record, proven ours now, with its forked processes; one line when it is not."""
    if rec.stack_id is None:
        raise UserError(f"stack record: version {rec.schema_version} holds no stack id, so no process of it can be "
                        "proven ours; start the stack with this `pdrepro stack up`")
    entry = next((p for p in rec.processes if p.name == name), None)
    if entry is None:
        raise UserError(f"stack record names no process {name!r} (it names {', '.join(p.name for p in rec.processes)}); "
                        "start the disaggregated stack with `pdrepro stack up`")
    survey = proof.survey(rec)
    leader = next(f for f, p in zip(survey.recorded, rec.processes) if p.name == name)
    if not leader.ours:
        raise UserError(f"{leader.line()}; only a running process the stack record proves ours is touched: "
                        "bring the stack up again (`pdrepro stack down RUN`, then `stack up`)")
    assert leader.pid is not None
    forked = tuple(f for f in survey.strays if f.ours and f.pid is not None and _descends(f.pid, leader.pid))
    return Role(entry, leader, forked)


def send(targets: list[proof.Finding], stack_id: str, sig: int) -> list[str]:
    """``sig`` to each target still proven ours; the names of those it reached."""
    return [f"{f.name} (pid {f.pid})" for f in targets if procs.send(f, stack_id, sig)]


def running(targets: list[proof.Finding]) -> list[proof.Finding]:
    """Those of ``targets`` still running (the very process: its start time is pinned)."""
    out = []
    for f in targets:
        st = ownership.stat(f.pid) if f.pid is not None else None
        if st is not None and st.alive and st.start_ticks == f.start_ticks:
            out.append(f)
    return out


def wait_gone(targets: list[proof.Finding], within_s: float) -> list[proof.Finding]:
    """Waits (answering a signal within ``signals.POLL_S``) until ``targets`` have ended; those left after
    ``within_s``."""
    deadline = time.monotonic() + within_s
    while (left := running(targets)) and time.monotonic() < deadline:
        signals.sleep(0.05)
    return left


def step_of(entry: record.Started, info_path: str | None) -> Step:
    """The launcher's step that starts ``entry`` again: its recorded argv, environment additions, log and health
    URL (the launcher's own additions are added by the launcher again)."""
    if entry.port is None:
        raise UserError(f"{entry.name}: the stack record holds no port for it (a version 1 record); start the stack "
                        "with this `pdrepro stack up`")
    env = {k: v for k, v in entry.env.items() if k not in LAUNCHER_ENV}
    base = entry.health_url.split("/", 3)
    info_url = f"{base[0]}//{base[2]}{info_path}" if info_path and len(base) >= 3 else None
    log_name = entry.log.split("/", 1)[1] if entry.log.startswith("logs/") else entry.log
    return Step(entry.name, entry.role, entry.argv, env, log_name, entry.health_url, entry.port, (entry.port,),
                info_url)


@dataclass
class Restarted:
    step: Step
    proc: subprocess.Popen
    launcher: Launcher


def start_again(run: RunDir, rec: record.StackRecord, entry: record.Started, info_path: str | None) -> Restarted:
    """Starts ``entry``'s role again as `stack up` started it; the record's entry for it is replaced (written
    before the spawn, completed after, as `stack up` does)."""
    launcher = Launcher(run, rec, start_budget_s=1.0)
    launcher.entries = list(rec.processes)
    step = step_of(entry, info_path)
    env = base_environment()
    # The inherited variables the stack's launch dropped are dropped again (the same rule, recomputed by the launcher).
    env = {k: v for k, v in env.items() if k not in entry.env_removed}
    proc = launcher.start(step, env)
    return Restarted(step, proc, launcher)


def up_now(again: Restarted) -> ready.Check:
    """Whether the restarted process is up (the launcher's own test), or why not."""
    code = again.proc.poll()
    if code is not None:
        return ready.Check(False, True, f"exited with code {code}")
    stack_id = again.launcher.stack_id
    return ready.check(again.step.health_url, again.step.info_url, again.step.argv, again.step.port, stack_id)


def mark_healthy(again: Restarted, after_s: float) -> record.StackRecord:
    """Completes the restarted entry as `stack up` completes one (its health time, its title) and saves it."""
    launcher = again.launcher
    at = next(i for i, e in enumerate(launcher.entries) if e.name == again.step.name)
    launcher.entries[at] = launcher.entries[at].model_copy(update={"healthy_after_s": round(after_s, 1),
                                                                   "title": Launcher._title(again.step, again.proc)})
    with signals.deferred():
        launcher._save()
    return launcher.rec
