"""Proves from the servers' start-up logs that KV moves over RDMA, not TCP.

A PD server that answers HTTP 200 over a TCP fallback is the failure this
guards against: its bandwidth would be a fraction of the fabric's.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..backends import TransferBackend, TransportReading


@dataclass(frozen=True)
class TransportProof:
    servers: tuple[TransportReading, ...]

    @property
    def proven(self) -> bool:
        return bool(self.servers) and all(s.verdict == "rdma" for s in self.servers)

    def allowed(self, policy: str) -> bool:
        """Whether the sweep may go on: RDMA everywhere, or under a scenario's `transport: any` one
        working transport (TCP included; whether the NIC witness applies is the checks' call)."""
        if policy == "any":
            return bool(self.servers) and all(s.verdict in ("rdma", "tcp") for s in self.servers)
        return self.proven

    def describe(self) -> str:
        return "; ".join(s.describe() for s in self.servers)

    def to_dict(self) -> dict:
        return {"proven": self.proven, "servers": {s.role: s.to_dict() for s in self.servers}}

    @property
    def used(self) -> str:
        verdicts = {s.verdict for s in self.servers}
        return verdicts.pop() if len(verdicts) == 1 else "mixed"


def prove(logs: dict[str, str], backend: TransferBackend) -> TransportProof:
    """``logs``: role (prefill, decode) -> log text, each read by the run's backend (its own start-up lines)."""
    return TransportProof(tuple(backend.scan(role, text) for role, text in logs.items()))


def fix_hint(backend: TransferBackend) -> str:
    """What to do where the proof found no RDMA: the containers' side, then the backend's own."""
    return ("make RDMA visible in both containers (/dev/infiniband devices, IPC_LOCK, memlock unlimited, host "
            f"network), {backend.rdma_hint}, and check with `pdrepro doctor`")
