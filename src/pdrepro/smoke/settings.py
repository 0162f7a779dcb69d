"""What an agent is told: the environment ``compose/smoke.yaml`` passes, read once."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import UserError
from .plan import SmokePlan


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
        )


def my_ip(settings: Settings) -> str:
    return settings.host_ip or socket.gethostbyname(socket.gethostname())
