"""What every doctor check shares: its result, the node's context, the facts read once.

With a role (prefill/decode) the node is held to what the GPU benchmark needs;
without one (a laptop preparing the smoke test) missing GPUs and RDMA are
warnings, because the smoke test runs without them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from ...host import nvidia, sysfs
from ...host.tools import ToolFailed, ToolMissing
from ...scenario.model import Scenario

PASS, WARN, FAIL = "pass", "warn", "fail"

# Ports the stack binds on a node, by role: the router runs next to the
# decode server (the decode node's rendered compose file), the bootstrap server inside prefill.
PORTS = {
    "prefill": [(30000, "prefill server HTTP"), (8998, "disaggregation bootstrap")],
    "decode": [(30001, "decode server HTTP"), (8000, "router")],
}


@dataclass(frozen=True)
class Check:
    name: str
    status: str
    detail: str
    fix: str = ""


@dataclass
class Context:
    sysfs_root: Path = sysfs.DEFAULT_ROOT
    role: str | None = None
    scenario: Scenario | None = None
    model: Path | None = None
    dataset: Path | None = None
    advertise_ip: str | None = None
    env: dict = field(default_factory=lambda: dict(os.environ))
    dev_dir: Path | None = Path("/dev/infiniband")  # None: reading a sysfs copy, not this host
    memlock: tuple[int, int] | None = None
    proc_root: Path = Path("/proc")  # where the local Docker engine's limits are read
    ports: list[tuple[int, str]] | None = None

    def server_env(self, key: str) -> tuple[str | None, str]:
        """A server setting and where it comes from: the scenario's launch env wins over this shell's."""
        scenario = self.scenario
        launch = scenario.launch if scenario is not None else None
        if scenario is not None and launch is not None and key in launch.env:
            return str(launch.env[key]), f"scenario {scenario.name}"
        if key in self.env:
            return self.env[key], "environment"
        return None, ""

    def wanted_ports(self) -> list[tuple[int, str]]:
        if self.ports is not None:
            return self.ports
        launch = getattr(self.scenario, "launch", None) if self.scenario is not None else None
        if launch is None:
            return PORTS[self.role] if self.role else PORTS["prefill"] + PORTS["decode"]
        p = launch.ports
        by_role = {
            "prefill": [(p.prefill, "prefill server HTTP"), (p.bootstrap, "disaggregation bootstrap")],
            "decode": [(p.decode, "decode server HTTP"), (p.router, "router")],
        }
        chosen = by_role[self.role] if self.role else by_role["prefill"] + by_role["decode"]
        return [(port, what) for port, what in chosen if port]

    @property
    def need(self) -> str:
        """Severity of something the GPU benchmark needs and the smoke test does not."""
        return FAIL if self.role else WARN


@dataclass
class Facts:
    """What the checks read once and share."""

    devices: list[sysfs.RdmaDevice]
    gpus: list[nvidia.Gpu] | None = None
    gpu_error: str | None = None
    driver: str | None = None
    driver_error: str | None = None
    topo: nvidia.Topology | None = None
    # Each PCIe NIC's relaxed-ordering path (host.pcie.Hop lists, by device), read once for the row and the record.
    relaxed_paths: dict | None = None

    @property
    def active_ports(self) -> list[sysfs.Port]:
        return [p for d in self.devices for p in d.ports if p.is_active]


def gather(ctx: Context) -> Facts:
    facts = Facts(devices=sysfs.read_rdma_devices(ctx.sysfs_root))
    try:
        facts.gpus = nvidia.query_gpus()
    except ToolMissing:
        facts.gpu_error = "nvidia-smi not found on PATH"
    except (ToolFailed, ValueError) as exc:
        facts.gpu_error = str(exc)
    if facts.gpus:
        try:
            facts.topo = nvidia.query_topology()
        except (ToolMissing, ToolFailed, ValueError):
            facts.topo = None  # sysfs still gives PCI paths
        facts.driver, facts.driver_error = nvidia.query_driver_version()
    return facts
