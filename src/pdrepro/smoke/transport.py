"""Which transport the Mooncake Transfer Engine really used, read from its log.

The engine's ``protocol`` argument does not pick the transport: it installs
RDMA whenever it finds a usable HCA and TCP otherwise (or when MC_FORCE_TCP is
set). So the smoke reads the engine's own start-up lines instead of trusting
what it asked for.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..mooncake_log import scan


@dataclass(frozen=True)
class TransportEvidence:
    transport: str | None           # "rdma", "tcp", or None when the log shows neither
    hcas_found: int | None
    rdma_devices: tuple[str, ...] = ()
    lines: tuple[str, ...] = field(default=(), compare=False)

    def to_dict(self) -> dict:
        return {"transport": self.transport, "hcas_found": self.hcas_found,
                "rdma_devices": list(self.rdma_devices), "lines": list(self.lines)}

    @classmethod
    def from_dict(cls, data: dict) -> "TransportEvidence":
        """The other side's evidence as ``to_dict`` sent it."""
        return cls(data["transport"], data["hcas_found"], tuple(data["rdma_devices"]), tuple(data["lines"]))


def detect(log_lines, force_tcp: bool = False) -> TransportEvidence:
    seen = scan("smoke", "\n".join(log_lines))
    rdma = bool(seen.rdma_installed or seen.devices)
    tcp = bool(seen.tcp_listens or seen.force_tcp)
    # RDMA wins when it was installed: TCP may sit next to it, but a segment
    # published with RDMA is read over RDMA. MC_FORCE_TCP overrides both.
    if force_tcp and tcp:
        transport = "tcp"
    elif rdma:
        transport = "rdma"
    elif tcp:
        transport = "tcp"
    else:
        transport = None
    hcas = seen.hca_counts[-1] if seen.hca_counts else None
    return TransportEvidence(transport, hcas, tuple(seen.devices), tuple(seen.evidence))


def fallback_reason(evidence: TransportEvidence, force_tcp: bool, ib_dir_present: bool) -> str:
    """Why the engine did not use RDMA, in terms a user can act on."""
    if force_tcp:
        return "MC_FORCE_TCP=1 is set; unset it (SMOKE_TRANSPORT=rdma does)"
    if evidence.hcas_found == 0 or evidence.hcas_found is None:
        if not ib_dir_present:
            return ("no /dev/infiniband in the container: the engine found 0 HCAs; on a laptop create a soft-RoCE "
                    "device with `scripts/softroce.sh up`, then rerun (the smoke passes /dev/infiniband when the host has it)")
        return ("the engine found 0 HCAs although /dev/infiniband exists: no port is ACTIVE with a GID, or the "
                "uverbs devices are not accessible; check `rdma link` / `scripts/softroce.sh status`")
    return "the engine found an HCA but did not install the RDMA transport; see its log lines in the run's logs/"
