"""GID type and index: the GID the transfer engine picks must be a RoCE v2 GID with a network device, at an index
both ends can reach. The nodes' records say which GID each active port uses and whether it routes between nodes
(nics[].ports[].gid_index, gid_type, gid_reachable); the servers'
logs say what the engine picked ("Find best gid index", "No suitable GID found"). A GID without a reachable
network device sends the KV nowhere or over TCP, so where the transport fell back it can account for the gap."""

from __future__ import annotations

import re

from ...core.roles import SERVER_ROLES
from ...rundir.diagnosismodel import EvidenceItem
from ..evidence import RunEvidence
from ..gaps import Gaps
from ..nodes import problems
from .base import Answer, Cause, Cleared, Finding, Missing, item
from .loglines import matching

_GID_LINE = re.compile(r"Find best gid index: -?\d+ on \S+(?: \(network state: (?P<state>[^)]*)\))?|"
                       r"(?P<none>No suitable GID found on \S+)")
_GOOD_STATE = "with network device"


class Gid(Cause):
    name = "gid type and index"

    def read(self, ev: RunEvidence, gaps: Gaps) -> Answer:
        bad: list[EvidenceItem] = []
        good: list[str] = []
        for record in ev.nodes.values():
            where = f"{ev.nodes_where}/{record.role}.json"
            for nic, port in record.ports():
                said = (f"{record.role} {nic.device}/{port.port}: gid_index {port.gid_index}, gid_type {port.gid_type}, "
                        f"address {port.gid_address}, netdev {port.netdev}, gid_reachable {port.gid_reachable}")
                if port.gid_reachable is True:
                    good.append(f"{where}: {said[:160]}")
                elif port.gid_reachable is False or port.gid_index is None:
                    # No GID at all, or one that does not route between nodes: the engine skips the port or falls back.
                    bad.append(item("sysfs", where, said))
        for m in ev.log_runs():
            for role in SERVER_ROLES:
                for path in m.run.role_logs(role):
                    for number, text, match in matching(path, _GID_LINE):
                        if match["none"] or (match["state"] and match["state"] != _GOOD_STATE):
                            bad.append(item("log line", ev.rel(path), text, number))
                        else:
                            good.append(f"{ev.rel(path)}:{number}")
        if bad:
            fell_back = any(m.summary is not None and m.summary.transport in ("tcp", "mixed") for m in ev.summaries())
            return Finding(fault=True, loss=gaps.largest if fell_back else 0.0,
                           summary="a port has no usable RoCE v2 GID with a network device"
                                   + (" and the KV fell back to TCP" if fell_back else ""),
                           evidence=tuple(bad[:8]),
                           fix="give the RoCE netdev an IP address so it has a RoCE v2 GID, and pin that index with "
                               "MC_GID_INDEX (the same type at both ends); `pdrepro doctor` lists the good indices")
        if good:
            return Cleared(f"the GIDs picked have a network device ({'; '.join(good[:3])})")
        if why := ev.no_fabric_why():
            return Cleared(f"{why}, so no GID was picked to carry it")
        return Missing("neither a node record's GID of an active port (RUN/nodes/<role>.json, `pdrepro doctor --out`) nor "
                       "a server log line of the GID the engine picked" + problems(ev.nodes))
