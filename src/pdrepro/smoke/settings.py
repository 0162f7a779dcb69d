"""What an agent is told: the environment ``compose/smoke.yaml`` passes, read once."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import UserError
from ..scenario.smokeplan import SmokePlan

# The transfer engines the smoke can move its bytes through, besides the socket copy. Mooncake's figures
# are the rows' own (the report's table and checks are built on them), so it is always one of them.
BACKENDS = ("mooncake", "nixl")
DEFAULT_BACKENDS = ("mooncake",)


def parse_backends(text: str, source: str = "--backends") -> tuple[str, ...]:
    """A comma list of BACKENDS, in the order given, each once; Mooncake among them."""
    names = [n.strip() for n in text.split(",")]
    if not text.strip() or "" in names:
        raise UserError(f"{source} {text!r}: give a comma list of {', '.join(BACKENDS)} (e.g. mooncake,nixl)")
    unknown = [n for n in names if n not in BACKENDS]
    if unknown:
        raise UserError(f"{source}: unknown backend {unknown[0]!r}; pick from {', '.join(BACKENDS)}")
    if len(set(names)) != len(names):
        raise UserError(f"{source} {text!r} names a backend twice; give each once")
    if "mooncake" not in names:
        raise UserError(f"{source} {text!r}: the smoke's rows are Mooncake's, so mooncake must be one of them "
                        "(e.g. mooncake,nixl)")
    return tuple(names)


@dataclass(frozen=True)
class Settings:
    plan: SmokePlan
    transport: str          # what the user asked for: auto | tcp | rdma
    control_port: int
    data_port: int
    peer: str               # the target's host name, for the initiator
    results: Path
    timeout_s: float
    host_ip: str | None
    wait: str = "sleep"     # how the initiator waits for the engine: sleep | spin
    backends: tuple[str, ...] = DEFAULT_BACKENDS

    @classmethod
    def from_env(cls, env=os.environ) -> Settings:
        want = env.get("SMOKE_TRANSPORT", "auto")
        if want not in ("auto", "tcp", "rdma"):
            raise UserError(f"SMOKE_TRANSPORT={want!r}; use auto, tcp or rdma")
        wait = env.get("SMOKE_WAIT", "sleep")
        if wait not in ("sleep", "spin"):
            raise UserError(f"SMOKE_WAIT={wait!r}; use sleep or spin")
        if "SMOKE_PLAN" not in env:
            raise UserError("SMOKE_PLAN is not set; start the agents with `pdrepro smoke`")
        return cls(
            plan=SmokePlan.from_json(env["SMOKE_PLAN"]),
            transport=want,
            control_port=int(env.get("SMOKE_CONTROL_PORT", "18080")),
            data_port=int(env.get("SMOKE_DATA_PORT", "18081")),
            peer=env.get("SMOKE_PEER", "prefill"),
            results=Path(env.get("SMOKE_RESULTS", "/results")),
            timeout_s=float(env.get("SMOKE_TIMEOUT_S", "600")),
            host_ip=env.get("SMOKE_HOST_IP") or None,
            wait=wait,
            backends=parse_backends(env.get("SMOKE_BACKENDS", ",".join(DEFAULT_BACKENDS)), "SMOKE_BACKENDS"),
        )


def my_ip(settings: Settings) -> str:
    return settings.host_ip or socket.gethostbyname(socket.gethostname())
