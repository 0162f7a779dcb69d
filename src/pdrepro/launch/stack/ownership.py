"""What Linux's /proc says about a process and a port: its start time, session, group, command line,
the stack marker in its environment, and which processes hold a port's listening socket.

The only module of the stack that reads /proc, through the capped reader (core.runfile.read_host). Every read
answers None (or nothing) when the process is gone or the file cannot be read: a process whose facts cannot be
read is never proven ours."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ...core import runfile

PROC = Path("/proc")
# The launcher puts MARKER=<the record's stack_id> into each child's environment; a server's own children
# inherit it, whatever they call themselves, and /proc/PID/environ shows it to the owner of the process.
MARKER = "PDREPRO_STACK_ID"
# /proc/net/tcp{,6}: a socket in state 0A listens.
_LISTEN = "0A"
# A PID Linux hands out is at most 2**22; a record's larger one names no process.
PID_MAX = 1 << 22


def boot_id() -> str:
    try:
        return runfile.read_host(PROC / "sys/kernel/random/boot_id", runfile.PROC).strip()
    except OSError:
        return "unknown"


@dataclass(frozen=True)
class Stat:
    state: str          # R, S, D, Z (zombie: it has ended), ...
    ppid: int
    pgid: int
    sid: int
    start_ticks: int    # clock ticks after boot at which it started (field 22)

    @property
    def alive(self) -> bool:
        return self.state not in ("Z", "X")


def _valid(pid: int) -> bool:
    return isinstance(pid, int) and 0 < pid <= PID_MAX


def stat(pid: int) -> Stat | None:
    if not _valid(pid):
        return None
    try:
        text = runfile.read_host(PROC / str(pid) / "stat", runfile.PROC, errors="strict")
    except (OSError, UnicodeDecodeError):
        return None
    # The command name (field 2) may hold spaces and parentheses: the fields after it follow the last ")".
    fields = text[text.rfind(")") + 2:].split()
    try:
        return Stat(fields[0], int(fields[1]), int(fields[2]), int(fields[3]), int(fields[19]))
    except (IndexError, ValueError):
        return None


def start_ticks(pid: int) -> int | None:
    st = stat(pid)
    return None if st is None else st.start_ticks


def _proc_bytes(pid: int, name: str) -> bytes | None:
    """/proc/PID/<name>, or None: no such process, or not ours to read (another user's)."""
    if not _valid(pid):
        return None
    try:
        return runfile.read_host_bytes(PROC / str(pid) / name, runfile.PROC)
    except OSError:
        return None


def cmdline(pid: int) -> tuple[str, ...] | None:
    raw = _proc_bytes(pid, "cmdline")
    if raw is None:
        return None
    return tuple(raw.decode(errors="surrogateescape").split("\0")[:-1]) if raw else ()


def comm(pid: int) -> str:
    """The name the process gives itself (SGLang's children retitle themselves), for messages."""
    try:
        return runfile.read_host(PROC / str(pid) / "comm", runfile.PROC).strip() or "?"
    except OSError:
        return "?"


def marker(pid: int) -> str | None:
    """The stack id in the process's environment (as it was when it started), or None: none there, or
    the environment is not ours to read (another user's process)."""
    raw = _proc_bytes(pid, "environ")
    if raw is None:
        return None
    prefix = f"{MARKER}=".encode()
    for entry in raw.split(b"\0"):
        if entry.startswith(prefix):
            return entry[len(prefix):].decode(errors="replace")
    return None


def pids() -> list[int]:
    return sorted(int(e.name) for e in PROC.iterdir() if e.name.isdigit())


def marked(stack_id: str) -> list[int]:
    """Live processes carrying ``stack_id`` as their marker."""
    return [pid for pid in pids() if marker(pid) == stack_id and (st := stat(pid)) is not None and st.alive]


def ancestors(pid: int) -> set[int]:
    """``pid``'s parent, its parent's parent, ... up to init."""
    found: set[int] = set()
    st = stat(pid)
    while st is not None and st.ppid > 0 and st.ppid not in found:
        found.add(st.ppid)
        st = stat(st.ppid)
    return found


def listening_inodes(port: int) -> set[int]:
    """Inodes of the TCP sockets (IPv4 and IPv6, any address) listening on ``port``."""
    found: set[int] = set()
    for name in ("tcp", "tcp6"):
        try:
            lines = runfile.read_host(PROC / "net" / name, runfile.PROC).splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) < 10 or fields[3] != _LISTEN:
                continue
            try:
                if int(fields[1].rsplit(":", 1)[1], 16) == port:
                    found.add(int(fields[9]))
            except (IndexError, ValueError):
                continue
    return found


def socket_inodes(pid: int) -> set[int]:
    """Inodes of the sockets among ``pid``'s open files (readable for our own processes only)."""
    found: set[int] = set()
    if not _valid(pid):
        return found
    try:
        fds = os.listdir(PROC / str(pid) / "fd")
    except OSError:
        return found
    for fd in fds:
        try:
            link = os.readlink(PROC / str(pid) / "fd" / fd)
        except OSError:
            continue
        if link.startswith("socket:["):
            found.add(int(link[8:-1]))
    return found


def port_holders(port: int, candidates: list[int]) -> list[int]:
    """Those of ``candidates`` that hold a socket listening on ``port``."""
    inodes = listening_inodes(port)
    return [pid for pid in candidates if inodes & socket_inodes(pid)] if inodes else []
