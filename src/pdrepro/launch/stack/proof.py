"""Whether the processes a stack record names are the ones its launch started, proven against /proc
before anything is signalled or called running.

A recorded process is ours only when it runs now, on the boot the record names, with the start time,
the stack id in its environment and the command line the record holds. The processes the servers
forked (SGLang's scheduler and detokenizer, which retitle themselves) are ours by the stack id they
inherited, wherever they moved to (another process group, a new session). Nothing else is: a pid
that fails the proof is named and left alone, and some pids are never signalled whatever a record says."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from . import ownership
from .record import StackRecord, Started

OURS = "ours"            # proven: may be signalled
GONE = "gone"            # the recorded process is not running (its pid may now name another process: left alone)
UNPROVEN = "unproven"    # a live process the record names that is not this stack's: left alone, exit 2


@dataclass(frozen=True)
class Finding:
    name: str
    pid: int | None
    verdict: str
    why: str = ""
    start_ticks: int | None = None    # proven ones: the start time every signal is pinned to

    @property
    def ours(self) -> bool:
        return self.verdict == OURS

    def line(self) -> str:
        return f"{self.name} (pid {self.pid}): {self.why}"


@dataclass(frozen=True)
class Survey:
    recorded: list[Finding]                              # one per record entry, in the record's order
    strays: list[Finding] = field(default_factory=list)  # marked processes the record does not name, and
                                                         # unproven members of a proven server's group

    @property
    def targets(self) -> list[Finding]:
        return [f for f in (*self.recorded, *self.strays) if f.ours]

    @property
    def refused(self) -> list[Finding]:
        return [f for f in (*self.recorded, *self.strays) if f.verdict == UNPROVEN]


def untouchable(pid: int) -> str | None:
    """Why ``pid`` is never signalled, whatever a record says: no single process, init, this command,
    the shell that ran it, or anything in its process group or session."""
    if pid <= 0:
        return "names no single process (0 and negative pids address process groups)"
    if pid == 1:
        return "is init"
    me = os.getpid()
    if pid == me:
        return "is this command itself"
    if pid in ownership.ancestors(me):
        return "is one of the processes that started this command"
    st = ownership.stat(pid)
    if st is not None and st.pgid == os.getpgrp():
        return "is in this command's process group"
    if st is not None and st.sid == os.getsid(0):
        return "is in this command's session"
    return None


def prove(rec: StackRecord, p: Started) -> Finding:
    if p.pid is None:
        return Finding(p.name, None, GONE, "was recorded but not started")
    why = untouchable(p.pid)
    if why:
        return Finding(p.name, p.pid, UNPROVEN, f"{why}; never signalled")
    st = ownership.stat(p.pid)
    if st is None or not st.alive:
        return Finding(p.name, p.pid, GONE, "was not running")
    if p.start_ticks is None or st.start_ticks != p.start_ticks:
        # The pid was given to another process after ours ended: that one is not ours to touch.
        return Finding(p.name, p.pid, GONE, f"was not running (pid {p.pid} is now another process, "
                                            f"{ownership.comm(p.pid)}, started at another time: left alone)")
    if rec.stack_id is None:
        return Finding(p.name, p.pid, UNPROVEN, f"runs ({ownership.comm(p.pid)}), but a version 1 record holds no stack "
                                                "id to prove it by: left alone")
    if ownership.marker(p.pid) != rec.stack_id:
        return Finding(p.name, p.pid, UNPROVEN, f"runs ({ownership.comm(p.pid)}) without this stack's "
                                                f"{ownership.MARKER} in its environment: not started by this stack, left alone")
    if ownership.cmdline(p.pid) not in (p.argv, p.title):
        return Finding(p.name, p.pid, UNPROVEN, f"runs ({ownership.comm(p.pid)}) with a command line other than "
                                                "the recorded one: left alone")
    return Finding(p.name, p.pid, OURS, "running", st.start_ticks)


def _strays(rec: StackRecord, recorded: list[Finding]) -> list[Finding]:
    known = {f.pid for f in recorded if f.pid is not None}
    leaders = {f.pid: f.name for f in recorded if f.ours}
    found = []
    for pid in ownership.pids():
        if pid in known:
            continue
        st = ownership.stat(pid)
        if st is None or not st.alive:
            continue
        if ownership.marker(pid) == rec.stack_id:
            why = untouchable(pid)
            if why:
                found.append(Finding(ownership.comm(pid), pid, UNPROVEN, f"carries this stack's marker but {why}; "
                                                                         "never signalled"))
            else:
                found.append(Finding(ownership.comm(pid), pid, OURS, "forked by a server of this stack",
                                     st.start_ticks))
        elif st.pgid in leaders:
            found.append(Finding(ownership.comm(pid), pid, UNPROVEN, f"is in {leaders[st.pgid]}'s process group "
                                                                     f"without this stack's {ownership.MARKER}: left alone"))
    return found


def survey(rec: StackRecord) -> Survey:
    """Every recorded process proven or not, and the stack's processes the record does not name."""
    if rec.boot_id != ownership.boot_id():
        why = "was not running (started before this host last booted)"
        return Survey([Finding(p.name, p.pid, GONE, why) for p in rec.processes])
    recorded = [prove(rec, p) for p in rec.processes]
    return Survey(recorded, _strays(rec, recorded) if rec.stack_id else [])
