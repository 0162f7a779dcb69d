"""Relaxed ordering: with PCIe relaxed ordering off, a NIC writing into GPU memory is held to strict ordering, and a
newer Mooncake tuning note measured about 15 against 47 GB/s per 400G NIC on that path; so off, it can cost up to
1 - 15/47 of an RDMA transfer into GPU memory (over TCP the NIC does not write the GPU's memory, and it costs
nothing). Read from the servers' logs (the engine's start-up line naming MC_IB_PCI_RELAXED_ORDERING) and the nodes'
records (nics[].relaxed_ordering and the function on the path that forbids it, and the engine's knob as the servers
get it)."""

from __future__ import annotations

import re

from ...core.roles import SERVER_ROLES
from ...rundir.diagnosismodel import EvidenceItem
from ..evidence import RunEvidence
from ..gaps import Gaps
from ..nodes import problems
from .base import Answer, Cause, Cleared, Finding, Missing, item
from .loglines import matching

# The tuning note's figures for GPU-memory RDMA per 400G NIC, GB/s: relaxed ordering off and on.
OFF_GB_S, ON_GB_S = 15.0, 47.0
_LINE = re.compile(r"[Rr]elaxed ordering (?P<state>disabled|enabled)")


class RelaxedOrdering(Cause):
    name = "relaxed ordering"

    def read(self, ev: RunEvidence, gaps: Gaps) -> Answer:
        off: list[EvidenceItem] = []
        on: list[str] = []
        for m in ev.log_runs():
            for role in SERVER_ROLES:
                for path in m.run.role_logs(role):
                    for number, text, match in matching(path, _LINE):
                        if match["state"] == "disabled":
                            off.append(item("log line", ev.rel(path), text, number))
                        else:
                            on.append(f"{ev.rel(path)}:{number}")
        for record in ev.nodes.values():
            no, yes = record.relaxed_ordering()
            where = f"{ev.nodes_where}/{record.role}.json"
            off += [item("sysfs", where, f"{record.role} {said}") for said in no]
            on += [f"{where} ({said[:120]})" for said in yes]
        if off:
            rdma = any(m.summary is not None and m.summary.transport == "rdma" for m in ev.summaries())
            loss = 1.0 - OFF_GB_S / ON_GB_S if rdma else 0.0
            return Finding(fault=True, loss=loss,
                           summary="PCIe relaxed ordering is off on the path to the NICs"
                                   + (f"; on GPU-memory RDMA it can cost up to {loss * 100:.0f}%" if rdma else
                                      " (the KV did not take RDMA into GPU memory here, so it cost nothing measured)"),
                           evidence=tuple(off[:8]),
                           fix="set MC_IB_PCI_RELAXED_ORDERING=1 in the servers' environment (a tune can try it), and "
                               "allow relaxed ordering on the NICs' PCIe path (the NIC's firmware setting and the "
                               "root port)")
        if on:
            return Cleared(f"relaxed ordering is on ({'; '.join(on[:3])})")
        if why := ev.no_fabric_why():
            return Cleared(f"{why}, so no NIC wrote into GPU memory over PCIe")
        return Missing("no server log line of the engine's relaxed-ordering mode and no node record of it "
                       "(RUN/nodes/<role>.json from `pdrepro doctor --out`)" + problems(ev.nodes))
