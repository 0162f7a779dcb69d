"""NIC-to-GPU placement: a GPU whose NIC hangs off another PCIe switch or NUMA node sends its KV across the host's
interconnect. The nodes' records say so (gpus[].nic and nic_link: PIX/PXB under one switch, PHB/NODE within a
NUMA node, SYS across sockets; nics[].numa_node). The engine alone on the same box
shares the placement, so what it leaves below the line rate bounds what the placement can cost; without it, the
cost is not measured and the fault is listed at no share."""

from __future__ import annotations

from ...rundir.diagnosismodel import EvidenceItem
from ..evidence import RunEvidence
from ..gaps import Gaps
from ..nodes import problems
from .base import Answer, Cause, Cleared, Finding, Missing, item
from .engine import engine_short_of_line


class Placement(Cause):
    name = "nic-to-gpu placement"

    def read(self, ev: RunEvidence, gaps: Gaps) -> Answer:
        far: list[EvidenceItem] = []
        near: list[str] = []
        for record in ev.nodes.values():
            node = record.record
            if node is None or not node.gpus:
                continue  # no GPU seen there: the record says nothing of the placement
            where = f"{ev.nodes_where}/{record.role}.json"
            numa = {nic.device: nic.numa_node for nic in node.nics}
            for gpu in node.gpus:
                if gpu.nic is None or gpu.nic_link in (None, "unknown"):
                    continue  # no NIC placed with it, or a link not read: nothing to judge
                said = (f"{record.role} GPU {gpu.index} ({gpu.bus_id}) -> {gpu.nic} (NUMA node {numa.get(gpu.nic, -1)}): "
                        f"{gpu.nic_link}")
                if gpu.nic_link == "SYS":
                    far.append(item("sysfs", where, said))
                else:
                    near.append(said)
        if far:
            bound = engine_short_of_line(ev)
            return Finding(fault=True, loss=bound or 0.0,
                           summary="a GPU's NIC is not on its PCIe switch or NUMA node"
                                   + (f"; the engine alone on the box stays {bound * 100:.0f}% below the line rate, "
                                      "which bounds what it costs" if bound else "; its cost is not measured here"),
                           evidence=tuple(far[:8]),
                           fix="give each GPU the NIC under its own PCIe switch (`pdrepro ib-devices` writes the map), "
                               "and pin each server to the GPUs of the NICs' NUMA node")
        if near:
            return Cleared(f"each GPU's NIC is on its PCIe switch or NUMA node ({'; '.join(near[:2])})")
        if why := ev.no_fabric_why():
            return Cleared(f"{why}, so no NIC's place beside a GPU was on its path")
        return Missing("no node record of the GPUs' NICs (gpus[] of RUN/nodes/<role>.json, `pdrepro doctor --role ROLE "
                       "--out`)" + problems(ev.nodes))
