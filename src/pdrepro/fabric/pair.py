"""The pair check: the prefill node's record held against the decode node's, before a launch.

Each fact the two ends must share is compared where both records know it: a difference is a finding with
both values and the fix (the launch is refused), a value one side does not know is "not compared" (listed,
never a refusal, never a pass of that fact). The launch facts (page size, KV layout, TP) come from the
rendered launch or the scenario (launch.pairfacts), not from the records.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..rundir.noderecord import NodeRecord

MISMATCH, NOT_COMPARED, SAME = "mismatch", "not compared", "same"


@dataclass(frozen=True)
class Finding:
    fact: str
    outcome: str          # mismatch | not compared | same
    prefill: str
    decode: str
    fix: str = ""

    def line(self) -> str:
        both = f"prefill {self.prefill}, decode {self.decode}"
        if self.outcome == MISMATCH:
            return f"MISMATCH {self.fact}: {both}; fix: {self.fix}"
        if self.outcome == NOT_COMPARED:
            return f"not compared {self.fact}: {both}"
        return f"same {self.fact}: {self.prefill}"


UNKNOWN = "unknown"


def _show(value: object) -> str:
    if value is None:
        return UNKNOWN
    if isinstance(value, (set, frozenset, tuple, list)):
        return "/".join(str(v) for v in sorted(value, key=str)) if value else UNKNOWN
    return str(value)


def compare(fact: str, prefill: object, decode: object, fix: str) -> Finding:
    """One fact: not compared where either side is unknown (None or nothing), else same or a mismatch."""
    p, d = _show(prefill), _show(decode)
    if UNKNOWN in (p, d):
        return Finding(fact, NOT_COMPARED, p, d)
    return Finding(fact, SAME if p == d else MISMATCH, p, d, "" if p == d else fix)


def _ports(r: NodeRecord):
    return [p for n in r.nics for p in n.ports if p.active]


def _active_mtus(r: NodeRecord) -> set[int] | None:
    roce = [p for p in _ports(r) if p.link_layer == "Ethernet"]
    if not roce or any(p.active_mtu_bytes is None for p in roce):
        return None  # one port unread makes the node's MTU unknown, not the others' value
    return {p.active_mtu_bytes for p in roce if p.active_mtu_bytes is not None}


def _gid_types(r: NodeRecord) -> set[str] | None:
    ports = _ports(r)
    if not ports or any(p.gid_type is None for p in ports):
        return None
    return {p.gid_type for p in ports if p.gid_type is not None}


def _gid_reach(r: NodeRecord) -> str | None:
    ports = [(n.device, p) for n in r.nics for p in n.ports if p.active]
    if not ports:
        return None
    bad = [f"{d}/{p.port} index {p.gid_index}" for d, p in ports if p.gid_reachable is False]
    if bad:
        return "not routable on " + ", ".join(bad)
    if any(p.gid_reachable is None for _, p in ports):
        return None
    return "routable on every active port"


def _relaxed(r: NodeRecord) -> str | None:
    pcie = [n for n in r.nics if n.pci_address]
    if not pcie:
        return None
    if any(n.relaxed_ordering is False for n in pcie):
        return "off (" + ", ".join(n.device for n in pcie if n.relaxed_ordering is False) + ")"
    return "on" if all(n.relaxed_ordering for n in pcie) else None


def _knob(r: NodeRecord) -> str:
    return r.relaxed_ordering_knob if r.relaxed_ordering_knob is not None else "unset (0, off)"


def _peer_memory(r: NodeRecord) -> str:
    if r.with_nvidia_peermem == "0":
        return "DMA-BUF (WITH_NVIDIA_PEERMEM=0)"
    return "nvidia_peermem " + ("loaded" if r.nvidia_peermem_loaded else "not loaded")


SOFTWARE: tuple[tuple[str, Callable[[NodeRecord], object], str], ...] = (
    ("launcher", lambda r: r.software.launcher,
     "run both nodes' servers the same way (both compose, or both the host launcher)"),
    ("SGLang version", lambda r: r.software.sglang_version,
     "install the same SGLang on both nodes (the same pinned image, or the same wheel)"),
    ("Mooncake version", lambda r: r.software.mooncake_version,
     "install the same Mooncake transfer engine on both nodes"),
    ("wheel flavour", lambda r: r.software.wheel_flavour,
     "use wheels built for the same CUDA major on both nodes (cu12 or cu13, as docker/versions.env pins)"),
)


def check(prefill: NodeRecord, decode: NodeRecord, launch: dict | None = None) -> list[Finding]:
    """Every fact, in a fixed order: software, fabric, PCIe, GPU memory, then the launch's own."""
    out = [compare(fact, get(prefill), get(decode), fix) for fact, get, fix in SOFTWARE]
    if prefill.software.launcher == decode.software.launcher == "compose":
        out.append(compare("image digest", prefill.software.image_digest, decode.software.image_digest,
                           "load the same image on both nodes (docker save | ssh NODE docker load), not a build "
                           "of each node's own"))
    out.append(compare("active MTU", _active_mtus(prefill), _active_mtus(decode),
                       "set the same MTU on the RDMA netdevs of both nodes and their switch ports "
                       "(`ip link set dev NETDEV mtu 9000` gives RoCE MTU 4096), or MC_MTU to the smaller on both"))
    out.append(compare("GID type", _gid_types(prefill), _gid_types(decode),
                       "use RoCE v2 GIDs on both nodes: pin the RoCE v2 index with MC_GID_INDEX, or unset it"))
    reach_p, reach_d = _gid_reach(prefill), _gid_reach(decode)
    reach = compare("GID reachability", reach_p, reach_d, "")
    if reach.outcome != NOT_COMPARED and "not routable" in reach.prefill + reach.decode:
        # Not a difference but a side the other cannot reach: still a refusal, with the fix doctor gives.
        reach = Finding("GID reachability", MISMATCH, reach.prefill, reach.decode,
                        "give each RDMA netdev an IPv4 address so a RoCE v2 GID appears, or pin a routable index "
                        "with MC_GID_INDEX (see `pdrepro doctor`'s gid row on that node)")
    out.append(reach)
    out.append(compare("relaxed ordering (PCIe path)", _relaxed(prefill), _relaxed(decode),
                       "set Enable Relaxed Ordering on the PCIe path of both nodes' NICs, or on neither "
                       "(`pdrepro doctor`'s relaxed-ordering row names the functions)"))
    out.append(compare("MC_IB_PCI_RELAXED_ORDERING", _knob(prefill), _knob(decode),
                       "give both servers the same MC_IB_PCI_RELAXED_ORDERING (scenario launch.env)"))
    out.append(compare("peer memory", _peer_memory(prefill), _peer_memory(decode),
                       "register GPU memory the same way on both: `modprobe nvidia-peermem` on each node, or "
                       "WITH_NVIDIA_PEERMEM=0 (DMA-BUF) for both servers"))
    for fact, (p, d) in (launch or {}).items():
        out.append(compare(fact, p, d, f"give prefill and decode the same {fact} (scenario launch section, or "
                                       "`pdrepro render` again)"))
    return out
