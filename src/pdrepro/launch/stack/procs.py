"""Processes of this host told apart by PID *and* start time, so a recycled PID is never signalled,
and stopped by process group (each started child leads its own session and group)."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

PROC = Path("/proc")


def boot_id() -> str:
    try:
        return (PROC / "sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return "unknown"


def _stat(pid: int) -> list[str] | None:
    """The /proc/PID/stat fields after the command name (field 3, the state, first)."""
    try:
        text = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    return text[text.rfind(")") + 2:].split()


def start_ticks(pid: int) -> int | None:
    fields = _stat(pid)
    return None if fields is None else int(fields[19])


def running(pid: int, ticks: int) -> bool:
    """The very process that started at ``ticks`` still runs (a zombie has ended)."""
    fields = _stat(pid)
    return fields is not None and fields[0] != "Z" and int(fields[19]) == ticks


def group_members(pgid: int, since_ticks: int) -> list[int]:
    """Live processes of process group ``pgid`` started no earlier than its leader did: the leader
    and what it forked (SGLang's scheduler and detokenizer processes), even after the leader died.

    Linux gives out no PID still in use as a process group's id, so a process now holding the
    leader's PID with another start time means the whole group is gone and the PID was recycled:
    nothing of it is ours."""
    if since_ticks < 0:
        return []
    current = start_ticks(pgid)
    if current is not None and current != since_ticks:
        return []
    found = []
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        fields = _stat(int(entry.name))
        if fields and fields[0] != "Z" and int(fields[2]) == pgid and int(fields[19]) >= since_ticks:
            found.append(int(entry.name))
    return found


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass


def stop_group(pgid: int, since_ticks: int, grace_s: float, poll_s: float = 0.2) -> str:
    """SIGTERM to the group, SIGKILL to what is left after ``grace_s``; says what happened."""
    if not group_members(pgid, since_ticks):
        return "was not running"
    _signal_group(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        if not group_members(pgid, since_ticks):
            return "stopped (SIGTERM)"
        time.sleep(poll_s)
    if not group_members(pgid, since_ticks):
        return "stopped (SIGTERM)"
    _signal_group(pgid, signal.SIGKILL)
    for _ in range(50):
        if not group_members(pgid, since_ticks):
            break
        time.sleep(0.1)
    return f"killed (SIGKILL after {grace_s:.0f} s)"
