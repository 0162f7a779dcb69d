"""How much memory a container of the local Docker engine may lock (pin).

RDMA registration pins every buffer it moves, so a container's memlock limit
bounds what it can register. Whether a container can get more than the engine
process itself has depends on the engine's capabilities, not on its limit.
"""

from __future__ import annotations

from pathlib import Path

CAP_SYS_RESOURCE = 24


def _can_raise_limits(status: str) -> bool:
    """Root on the host with CAP_SYS_RESOURCE. A rootless engine holds its
    capabilities only inside its own user namespace and shows a non-zero uid
    here: it cannot raise a limit past the user's."""
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    uid = fields.get("Uid", "0").split()
    if uid and uid[0] != "0":
        return False
    cap_eff = fields.get("CapEff")
    if cap_eff is None:
        return True  # no capability line: assume a normal root engine
    return bool(int(cap_eff.strip(), 16) >> CAP_SYS_RESOURCE & 1)


def engine_memlock_cap(proc: Path = Path("/proc")) -> str | None:
    """The local Docker engine's memlock cap, when containers cannot exceed it.

    A root engine with CAP_SYS_RESOURCE (a normal systemd host, whose dockerd
    itself often runs with systemd's 8 MiB default) raises a container's
    limit to whatever it asks, so unlimited works: None. An engine without
    that capability (inside another container, rootless Docker) cannot: a
    container asking for more than the engine's own hard limit does not
    start, so that limit becomes the default."""
    for comm in proc.glob("[0-9]*/comm"):
        try:
            if comm.read_text().strip() != "dockerd":
                continue
            limits = (comm.parent / "limits").read_text()
            status = (comm.parent / "status").read_text()
        except OSError:
            continue
        if _can_raise_limits(status):
            return None
        for line in limits.splitlines():
            if line.startswith("Max locked memory"):
                hard = line.split()[4]
                return None if hard == "unlimited" else hard
    return None
