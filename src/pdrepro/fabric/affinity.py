"""Which NIC each GPU should send its KV cache through.

A GPU's traffic should cross as little of the PCIe tree as possible: a NIC on
the same PCIe switch beats one on the same host bridge, which beats one on
the same NUMA node; crossing sockets (SYS) costs bandwidth. Where several NICs
are equally near, GPUs are spread over them so no NIC carries more than its
share.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..host import sysfs
from ..host.nvidia import TOPO_MEANING, TOPO_RANK, Gpu, Topology

UNKNOWN = "unknown"


@dataclass(frozen=True)
class Placement:
    gpu: int
    nic: str
    link: str            # PIX / PXB / PHB / NODE / SYS / unknown
    source: str          # 'nvidia-smi topo' or 'sysfs'
    alternatives: tuple[tuple[str, str], ...]  # (nic, link) of every NIC considered

    def reason(self) -> str:
        meaning = TOPO_MEANING.get(self.link, "distance unknown")
        others = ", ".join(f"{n} {l}" for n, l in self.alternatives if n != self.nic)
        return (f"GPU{self.gpu} -> {self.nic}: {self.link} ({meaning}, from {self.source})"
                + (f"; others: {others}" if others else ""))


def sysfs_link(gpu_path: tuple[str, ...], gpu_numa: int, nic: sysfs.RdmaDevice) -> str:
    """The nvidia-smi topo word for a GPU/NIC pair, derived from their PCI paths."""
    nic_path = nic.pci_path
    if not gpu_path or not nic_path:
        return UNKNOWN
    common = 0
    for a, b in zip(gpu_path, nic_path):
        if a != b:
            break
        common += 1
    if common >= 3:  # root bus, root port and a switch upstream port shared
        below = max(len(gpu_path), len(nic_path)) - common
        return "PIX" if below <= 2 else "PXB"
    if common >= 1:
        return "PHB"
    if gpu_numa >= 0 and gpu_numa == nic.numa_node:
        return "NODE"
    if gpu_numa < 0 or nic.numa_node < 0:
        return UNKNOWN
    return "SYS"


def _rank(link: str) -> int:
    return TOPO_RANK.get(link, len(TOPO_RANK))


def links_for(gpus: list[Gpu], nics: list[sysfs.RdmaDevice], topo: Topology | None,
              root: Path) -> dict[int, tuple[str, dict[str, str]]]:
    """GPU index -> (source, {nic: link}); nvidia-smi's view where it covers the NIC, sysfs otherwise."""
    out = {}
    for gpu in gpus:
        row = topo.gpu_to_nic.get(gpu.index, {}) if topo else {}
        if row and all(n.name in row for n in nics):
            out[gpu.index] = ("nvidia-smi topo", {n.name: row[n.name] for n in nics})
            continue
        found = sysfs.pci_device(root, sysfs.normalize_bus_id(gpu.bus_id))
        path, numa = found if found else ((), -1)
        out[gpu.index] = ("sysfs", {n.name: sysfs_link(path, numa, n) for n in nics})
    return out


def place(gpus: list[Gpu], nics: list[sysfs.RdmaDevice], topo: Topology | None,
          root: Path) -> list[Placement]:
    """One NIC per GPU: the nearest, least-loaded among equals."""
    if not nics:
        return []
    links = links_for(gpus, nics, topo, root)
    load = {n.name: 0 for n in nics}
    placements = []
    for gpu in sorted(gpus, key=lambda g: g.index):
        source, row = links[gpu.index]
        best = min(_rank(l) for l in row.values())
        tied = [n for n in row if _rank(row[n]) == best]
        nic = min(tied, key=lambda n: (load[n], n))
        load[nic] += 1
        placements.append(Placement(gpu.index, nic, row[nic], source, tuple(sorted(row.items()))))
    return placements


def usable_nics(devices: list[sysfs.RdmaDevice]) -> list[sysfs.RdmaDevice]:
    """NICs the transfer engine can use: at least one ACTIVE port."""
    return [d for d in devices if any(p.is_active for p in d.ports)]
