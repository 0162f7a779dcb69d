"""MTU: the active RoCE MTU the nodes' records show (nodes/<role>.json: per active port, its netdev's MTU and the
RoCE MTU the kernel derives from it, nics[].ports[].active_mtu_bytes). Below the full 4096 each packet carries less payload
for the same 82 bytes of framing (core.roce), which costs the payload ceiling's share; two ends at different
MTUs are a fault of their own (the path runs at the smaller, and peers that do not agree fail to connect)."""

from __future__ import annotations

from ...core.roce import FULL_MTU
from ..evidence import RunEvidence
from ..gaps import Gaps, payload_loss
from ..nodes import problems
from .base import Answer, Cause, Cleared, Finding, Missing, item


class Mtu(Cause):
    name = "mtu"

    def read(self, ev: RunEvidence, gaps: Gaps) -> Answer:
        ports = [(record, port, netdev, roce) for record in ev.nodes.values() for port, netdev, roce in record.port_mtus()]
        if not ports and (why := ev.no_fabric_why()):
            return Cleared(f"{why}, so no port's MTU set its payload")
        if not ports:
            return Missing("no node record names an active port's MTU (RUN/nodes/<role>.json, written by `pdrepro "
                           "doctor --out`)" + problems(ev.nodes))
        evidence = tuple(item("sysfs", f"{ev.nodes_where}/{record.role}.json",
                              f"{record.role} {port}: netdev MTU {'unknown' if netdev is None else netdev} "
                              f"-> RoCE MTU {roce}")
                         for record, port, netdev, roce in ports)
        smallest = min(roce for *_, roce in ports)
        by_role = {r.role: min(roce for rec, _p, _n, roce in ports if rec is r) for r, *_ in ports}
        differ = len(set(by_role.values())) > 1
        if smallest >= FULL_MTU and not differ:
            return Cleared(f"every port of the nodes' records runs RoCE MTU {FULL_MTU}")
        loss = payload_loss(smallest) if smallest > 0 else 1.0
        said = ", ".join(f"{role} {mtu}" for role, mtu in sorted(by_role.items()))
        return Finding(fault=True, loss=loss,
                       summary=f"active RoCE MTU {smallest} (by node: {said})"
                               + ("; the two ends disagree" if differ else "")
                               + f": each packet carries less payload, {loss * 100:.1f}% below MTU {FULL_MTU}'s ceiling",
                       evidence=evidence,
                       fix=f"set the RoCE NICs' netdev MTU to 9000 on both nodes (RoCE MTU {FULL_MTU}), the same at "
                           "both ends and on the switch ports between them")
