"""How much memory a container of the local Docker engine may lock (pin), and the one way to raise it.

RDMA registration pins every buffer it moves, so a container's memlock limit
bounds what it can register. Whether a container can get more than the engine
process itself has depends on the engine's capabilities, not on its limit; how
to raise the engine's own limit depends on who started it (systemd or a shell).
"""

from __future__ import annotations

from pathlib import Path

from . import dockerd

# What the bundle's own engine script does when it starts dockerd: raise the limit, then start it.
ENGINE_SCRIPT = "bash .ci/docker-engine.sh"


def engine_memlock_cap(proc: Path = Path("/proc")) -> str | None:
    """The local Docker engine's memlock cap, when containers cannot exceed it.

    A root engine with CAP_SYS_RESOURCE (a normal systemd host, whose dockerd
    itself often runs with systemd's 8 MiB default) raises a container's
    limit to whatever it asks, so unlimited works: None. An engine without
    that capability (inside another container, rootless Docker) cannot: a
    container asking for more than the engine's own hard limit does not
    start, so that limit becomes the default."""
    engine = dockerd.find(proc)
    if engine is None or engine.can_raise_limits or engine.memlock_hard in (None, "unlimited"):
        return None
    return engine.memlock_hard


def raise_engine_limit(engine: dockerd.Dockerd | None) -> str:
    """The one fix that raises the engine's own memlock limit, for the way it was started."""
    if engine is not None and engine.unit is not None:
        return (f"dockerd runs as the systemd service {engine.unit}: `sudo systemctl edit {engine.unit}`, add "
                "`LimitMEMLOCK=infinity` under [Service], then `sudo systemctl restart "
                f"{engine.unit.removesuffix('.service')}`")
    pid = f" (pid {engine.pid})" if engine is not None else ""
    return (f"dockerd{pid} was started by hand, not by systemd: stop it, then start it again from a shell "
            f"that ran `ulimit -l unlimited` (as root: `{ENGINE_SCRIPT}` does both when no engine answers)")
