"""provenance.json as summary.json carries it: what ran (hosts, servers, bench client, logs, pins) and what
the sweep proved of the KV transport; the part of the summary the report's "what ran" section and the
pins gate read."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from ..core.roce import IbMtu
from .summarybase import Scalar, _Open


class ProofServer(_Open):
    summary: str = ""


class TransportProof(_Open):
    """What the sweep proved of the KV transport (provenance.json's `transport`)."""

    proven: bool | None = None
    skipped: bool | None = None
    servers: dict[str, ProofServer] = Field(default_factory=dict)


class GpuFacts(_Open):
    gpus: list[str] | None = None
    driver: str | None = None
    cuda: str | None = None
    error: str | None = None


class NicPort(_Open):
    """One port of an RDMA device as the sweep recorded it: sysfs's raw words and, on a RoCE port, the MTUs."""

    rate: str | None = Field(default=None, description="sysfs's rate word, as printed")
    state: str | None = Field(default=None, description="sysfs's state word, as printed")
    link_layer: str | None = Field(default=None, description="Ethernet (RoCE) or InfiniBand")
    netdev: str | None = Field(default=None, description="the netdev the port's GIDs sit on")
    netdev_mtu: int | None = Field(default=None, description="MTU of the port's netdev, bytes")
    roce_mtu: IbMtu | None = Field(default=None, description="the RoCE MTU the kernel derives from it, bytes")


class NicFacts(_Open):
    """One RDMA device as the sweep recorded it (provenance.json host.nics)."""

    fw_ver: str | None = None
    board_id: str | None = None
    ports: dict[str, NicPort] = Field(default_factory=dict)


class HostFacts(_Open):
    hostname: str | None = "?"
    kernel: str | None = "?"
    gpu: GpuFacts = Field(default_factory=GpuFacts)
    nics: dict[str, NicFacts] | None = None


class ServerInfo(_Open):
    """The parts of a server's /server_info that say how it was set up for PD, in the order a reader wants them."""

    version: str | None = None
    error: str | None = None
    model_path: Scalar = None
    tp_size: Scalar = None
    disaggregation_mode: Scalar = None
    disaggregation_transfer_backend: Scalar = None
    mem_fraction_static: Scalar = None
    attention_backend: Scalar = None
    chunked_prefill_size: Scalar = None
    page_size: Scalar = None
    base_gpu_id: Scalar = None

    def setup(self) -> list[tuple[str, Scalar]]:
        """The PD set-up arguments the server reported, in their declared order."""
        names = [n for n in ServerInfo.model_fields if n not in ("version", "error")]
        return [(n, v) for n, v in self.model_dump(include=set(names)).items() if v is not None]


class BenchImage(_Open):
    in_place: bool | None = None
    python: str | None = None
    image: str | None = None


class LogsFacts(_Open):
    kind: str | None = "not recorded"
    folder: str | None = None


class Pins(_Open):
    sglang_commit: str | None = None
    mooncake_commit: str | None = None


class ProvenanceScenario(_Open):
    name: str | None = None
    fingerprint: str | None = None


class RunProvenance(_Open):
    """provenance.json as the summary carries it. The sweep records the fields named here; the smoke
    records flat facts of its own (its `host` a name), shown as they stand."""

    kind: str | None = Field(default=None, description="what recorded it: \"smoke\" for the smoke (the sweep sets none)")
    recorded_at: str | None = None
    host: HostFacts | str | None = None
    endpoints: dict[str, str] | None = None
    server_info: dict[str, ServerInfo | str | None] | None = None
    bench_image: BenchImage | None = None
    logs: LogsFacts | None = None
    environment: dict[str, Scalar] | None = None
    transport: TransportProof | None = None
    pins: Pins | None = None
    scenario: ProvenanceScenario | None = None

    def facts(self) -> dict[str, Any]:
        """Every fact as recorded, for a record shown whole (the smoke's)."""
        return self.model_dump(exclude_unset=True)

    def recorded(self) -> bool:
        """Whether the record holds any fact at all (an empty provenance.json records nothing)."""
        return bool(self.model_fields_set or self.model_extra)
