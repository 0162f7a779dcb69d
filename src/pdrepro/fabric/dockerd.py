"""The local Docker engine's process as /proc shows it: where it is, what it may do, and who started it.

Everything here is read from a /proc-shaped tree (the real /proc, or a test's copy), never from the
engine's API: a limit is a property of the process, and the API does not say how the process was started.
Each file is read with a size bound, because a tree handed to us may be anything.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..core import runfile

READ_LIMIT = 64 * 1024  # /proc's status, limits and cgroup files are a few KiB; more is not /proc
CAP_SYS_RESOURCE = 24
# A systemd service unit in a cgroup path: /system.slice/docker.service, /system.slice/snap.docker.dockerd.service.
SERVICE = re.compile(r"/([A-Za-z0-9@._-]+\.service)(?:/|$)")


@dataclass(frozen=True)
class Dockerd:
    pid: int
    can_raise_limits: bool  # root with CAP_SYS_RESOURCE: may give a container more than its own limit
    memlock_hard: str | None  # the engine's own hard limit as /proc prints it ("unlimited" or bytes); None: unread
    unit: str | None  # the systemd service that runs it, or None: started by hand (a shell, a script)


def _read(path: Path) -> str | None:
    try:
        return runfile.read_host_bytes(path, runfile.PROC)[:READ_LIMIT].decode("utf-8", "replace")
    except OSError:
        return None


def _fields(status: str) -> dict[str, str]:
    return {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in status.splitlines()) if v}


def can_raise_limits(status: str) -> bool:
    """Root on the host with CAP_SYS_RESOURCE. A rootless engine holds its capabilities only inside its own
    user namespace and shows a non-zero uid here: it cannot raise a limit past the user's."""
    fields = _fields(status)
    uid = fields.get("Uid", "0").split()
    if uid and uid[0] != "0":
        return False
    cap_eff = fields.get("CapEff")
    if cap_eff is None:
        return True  # no capability line: assume a normal root engine
    try:
        return bool(int(cap_eff, 16) >> CAP_SYS_RESOURCE & 1)
    except ValueError:
        return False  # a mangled mask proves no capability


def memlock_hard(limits: str) -> str | None:
    for line in limits.splitlines():
        if line.startswith("Max locked memory"):
            words = line.split()
            return words[4] if len(words) > 4 else None
    return None


def service_unit(proc: Path, pid: int, status: str) -> str | None:
    """The systemd service that started PID, or None when it was started by hand.

    The cgroup decides: systemd puts every service in a cgroup named after its unit, while a daemon started
    from a shell stays in that shell's session scope (or the container's root cgroup) even after it is
    reparented to PID 1. Only when no cgroup file can be read does the parent decide: a daemon whose parent
    is systemd was most likely started by it (one started by hand and orphaned looks the same, hence the
    cgroup first)."""
    cgroup = _read(proc / str(pid) / "cgroup")
    if cgroup:
        for line in cgroup.splitlines():
            match = SERVICE.search(line.rsplit(":", 1)[-1])
            if match:
                return match.group(1)
        return None
    ppid = _fields(status).get("PPid", "")
    if ppid.isdigit() and (_read(proc / ppid / "comm") or "").strip() == "systemd":
        return "docker.service"
    return None


def find(proc: Path = Path("/proc")) -> Dockerd | None:
    """The first dockerd process under PROC, or None when no engine runs here (or it is not visible)."""
    for comm in sorted(proc.glob("[0-9]*/comm")):
        if (_read(comm) or "").strip() != "dockerd":
            continue
        status, limits = _read(comm.parent / "status"), _read(comm.parent / "limits")
        if status is None or limits is None:
            continue
        pid = int(comm.parent.name)
        return Dockerd(pid, can_raise_limits(status), memlock_hard(limits), service_unit(proc, pid, status))
    return None
