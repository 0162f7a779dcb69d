"""Reads each node's RDMA port counters around a length, for the analysis's NIC witness.

The sweep runs on the decode node (next to the router), so the decode side's
counters are read from this host's sysfs. The prefill node's are read inside
its server container, through the same Docker engine (local or ssh://) the
sweep takes that server's log from: the container runs with host networking,
so its /sys/class/infiniband is the node's. A log folder gives no way onto the
prefill node; the record then says so and the witness rests on the decode node.
"""

from __future__ import annotations

import socket
import time
from pathlib import Path

from ..fabric.counters import SNAPSHOT_SCRIPT, parse_snapshot, read_ports
from ..rundir.counters import CounterNode, CounterReading, CountersRecord


def _devices(sysfs: Path) -> list[str]:
    """The RDMA devices a node's sysfs lists: an empty list is the sweep's evidence that the node has none."""
    return sorted(p.name for p in sysfs.iterdir()) if sysfs.is_dir() else []


def _has_data(ports: dict) -> bool:
    return any("port_xmit_data" in p or "port_rcv_data" in p for p in ports.values())


class CounterReader:
    def __init__(self, sysfs: Path, log_source=None):
        self.sysfs, self.log_source = Path(sysfs), log_source

    def _local(self) -> dict:
        source = f"{self.sysfs} on {socket.gethostname()} (the host running the sweep)"
        ports, devices = read_ports(self.sysfs), _devices(self.sysfs)
        if not _has_data(ports):
            return {"source": source, "rdma_devices": devices,
                    "error": f"no RDMA port counters under {self.sysfs} on this host"}
        return {"source": source, "rdma_devices": devices, "at": time.time(), "ports": ports}

    def _remote(self, role: str) -> dict:
        run = getattr(self.log_source, "run_script", None)
        if run is None:
            return {"source": None, "error": f"the {role} node's counters were not read: no log source reaches it"}
        text, where = run(role, SNAPSHOT_SCRIPT)
        at = time.time()
        if text is None:
            return {"source": where, "error": f"the {role} node's counters were not read: {where}"}
        ports = parse_snapshot(text)
        # The snapshot lists every port of every device: a device without ports carries no KV either.
        devices = sorted({name.split("/", 1)[0] for name in ports})
        if not _has_data(ports):
            return {"source": where, "rdma_devices": devices,
                    "error": f"no RDMA port counters in /sys/class/infiniband of {where}"}
        return {"source": where, "rdma_devices": devices, "at": at, "ports": ports}

    def read(self) -> dict[str, dict]:
        return {"prefill": self._remote("prefill"), "decode": self._local()}


def record(before: dict[str, dict], after: dict[str, dict], prompt_len: int) -> CountersRecord:
    """RUN/counters/<L>.json: each node's readings around the length, as read."""
    nodes = {}
    for role in sorted(set(before) | set(after)):
        b, a = before.get(role) or {}, after.get(role) or {}
        error = b.get("error") or a.get("error")
        node = CounterNode(source=a.get("source") or b.get("source"))
        if "rdma_devices" in a or "rdma_devices" in b:
            node.rdma_devices = sorted(set(b.get("rdma_devices") or ()) | set(a.get("rdma_devices") or ()))
        if error:
            node.error = error
        else:
            node.before = CounterReading(at=b["at"], ports=b["ports"])
            node.after = CounterReading(at=a["at"], ports=a["ports"])
        nodes[role] = node
    return CountersRecord.of(prompt_len, nodes)
