"""Which GID index the Mooncake Transfer Engine picks on its own (MC_GID_INDEX unset).

The rule at the pinned Mooncake commit, restated: only non-null RoCE v2 or
InfiniBand GIDs are candidates. They are ranked in classes, then by index:

  0 network-routable       has a net device, not degraded, not a private IPv4
  1 no-network-routable    the same without a net device
  2 network-private-v4     IPv4-mapped 10/8, 172.16/12 or 100.64/10, with a net device
  3 network-degraded       on a docker*/cni*/flannel*/calico*/vxlan* net device or
                           tunl0, or an IPv6 link-local (fe80::) RoCE v2 GID
  4 no-network-private-v4
  5 no-network-degraded
  6 fallback-nonzero       the first readable non-null GID of another type (RoCE v1)

Knowing the pick before a run matters: a GID on docker0, a link-local one or a
RoCE v1 fallback connects nowhere useful, and the failure shows up only as a
transfer timeout minutes into the benchmark.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from ..host.sysfs import Gid, Port

CLASSES = (
    "network-routable",
    "no-network-routable",
    "network-private-v4",
    "network-degraded",
    "no-network-private-v4",
    "no-network-degraded",
    "fallback-nonzero",
)
GOOD_CLASSES = frozenset(CLASSES[:3])

_OVERLAY_PREFIXES = ("flannel", "cni", "calico", "vxlan", "docker")
_PRIVATE_V4 = tuple(ipaddress.IPv4Network(n) for n in ("10.0.0.0/8", "172.16.0.0/12", "100.64.0.0/10"))


@dataclass(frozen=True)
class GidChoice:
    port: str
    index: int
    gid: str
    gid_type: str
    klass: str
    ndev: str | None
    ip: str | None

    @property
    def is_good(self) -> bool:
        return self.klass in GOOD_CLASSES


def verbs_type(gid: Gid, link_layer: str) -> str | None:
    """The type ibv_query_gid_ex reports: 'roce_v2', 'ib', 'roce_v1', or None (query fails)."""
    if gid.type is None:
        return None
    if gid.type.strip() == "RoCE v2":
        return "roce_v2"
    if gid.type.strip() == "IB/RoCE v1":
        return "ib" if link_layer == "InfiniBand" else "roce_v1"
    return "other"


def is_overlay_netdev(ndev: str | None) -> bool:
    return ndev is not None and (ndev.startswith(_OVERLAY_PREFIXES) or ndev == "tunl0")


def classify(gid: Gid, link_layer: str) -> str | None:
    kind = verbs_type(gid, link_layer)
    if kind is None or gid.is_null or kind not in ("roce_v2", "ib"):
        return None
    roce_v2 = kind == "roce_v2"
    v4 = gid.ipv4
    addr = gid.address
    overlay_iface = roce_v2 and is_overlay_netdev(gid.ndev)
    private_v4 = roce_v2 and not overlay_iface and v4 is not None and any(v4 in n for n in _PRIVATE_V4)
    link_local = roce_v2 and v4 is None and addr is not None and addr.is_link_local
    degraded = overlay_iface or link_local
    if gid.ndev:
        return "network-degraded" if degraded else "network-private-v4" if private_v4 else "network-routable"
    return "no-network-degraded" if degraded else "no-network-private-v4" if private_v4 else "no-network-routable"


def rank(port: Port) -> list[GidChoice]:
    """Candidates best first, as the engine would try them."""
    ranked: list[tuple[int, int, GidChoice]] = []
    fallback: GidChoice | None = None
    for gid in port.gids:
        klass = classify(gid, port.link_layer)
        kind = verbs_type(gid, port.link_layer)
        if klass is None or kind is None:
            if fallback is None and kind is not None and not gid.is_null:
                fallback = _choice(port, gid, kind, "fallback-nonzero")
            continue
        ranked.append((CLASSES.index(klass), gid.index, _choice(port, gid, kind, klass)))
    out = [c for _, _, c in sorted(ranked, key=lambda t: (t[0], t[1]))]
    if fallback is not None:
        out.append(fallback)
    return out


def pick(port: Port) -> GidChoice | None:
    """The GID index Mooncake would use on PORT, or None (it then skips the device)."""
    ranked = rank(port)
    return ranked[0] if ranked else None


def _choice(port: Port, gid: Gid, kind: str, klass: str) -> GidChoice:
    return GidChoice(port=port.name, index=gid.index, gid=gid.gid, gid_type=kind,
                     klass=klass, ndev=gid.ndev, ip=gid.ip)
