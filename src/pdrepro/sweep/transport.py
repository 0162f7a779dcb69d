"""Proves from the servers' start-up logs that KV moves over RDMA, not TCP.

The Mooncake Transfer Engine (at the pinned commit) logs, through glog, which
transport it installed. What counts as evidence:

* RDMA: ``installTransport, type=rdma``, ``RDMA device: <dev>, LID: ..., GID:
  (GID_Index N) ...`` and ``Find best gid index: N on <dev>/<port> (network
  state: ...)``; ``Topology discovery complete. Found N HCAs.`` with N > 0.
* TCP: ``MC_FORCE_TCP is set, using TCP transport only``, ``TcpTransport:
  listen on port N``, or ``Found 0 HCAs.`` (it then silently installs TCP).
* Trouble: ``No suitable GID found on <dev>/<port>`` and ``Failed to install
  RDMA transport``.

A PD server that answers HTTP 200 over a TCP fallback is the failure this
guards against: its bandwidth would be a fraction of the fabric's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_RDMA_INSTALLED = re.compile(r"installTransport, type=rdma\b")
_RDMA_DEVICE = re.compile(r"RDMA device: (?P<dev>[^,\s]+), LID: \S+, GID: \(GID_Index (?P<gid>-?\d+)\)")
_BEST_GID = re.compile(r"Find best gid index: (?P<gid>-?\d+) on (?P<dev>[^/\s]+)/(?P<port>\d+)(?: \(network state: (?P<state>[^)]*)\))?")
_HCAS = re.compile(r"Topology discovery complete\. Found (?P<n>\d+) HCAs\.")
_FORCE_TCP = re.compile(r"MC_FORCE_TCP is set, using TCP transport only")
_TCP_LISTEN = re.compile(r"TcpTransport: listen on port (?P<port>\d+)")
_NO_GID = re.compile(r"No suitable GID found on (?P<dev>[^/\s]+)/(?P<port>\d+)")
_RDMA_FAILED = re.compile(r"Failed to install RDMA transport")


@dataclass
class ServerTransport:
    role: str
    rdma_installed: int = 0
    devices: dict[str, int] = field(default_factory=dict)  # device -> GID index
    gid_states: dict[str, str] = field(default_factory=dict)
    hca_counts: list[int] = field(default_factory=list)
    force_tcp: int = 0
    tcp_listens: int = 0
    no_gid: list[str] = field(default_factory=list)
    rdma_failed: int = 0
    lines_read: int = 0

    @property
    def verdict(self) -> str:
        if self.force_tcp or (self.tcp_listens and not self.rdma_installed):
            return "tcp"
        if self.hca_counts and max(self.hca_counts) == 0:
            return "tcp"
        if self.rdma_installed and self.devices and not self.rdma_failed:
            return "rdma"
        if self.no_gid or self.rdma_failed:
            return "rdma-broken"
        return "unknown"

    def describe(self) -> str:
        if self.verdict == "rdma":
            devs = ", ".join(f"{d} (GID index {g})" for d, g in sorted(self.devices.items()))
            degraded = [d for d, s in self.gid_states.items() if s != "with network device"]
            extra = f"; GID without network device on {', '.join(sorted(degraded))}" if degraded else ""
            return f"{self.role}: RDMA on {devs}{extra}"
        found = []
        if self.force_tcp:
            found.append(f"'MC_FORCE_TCP is set' x{self.force_tcp}")
        if self.hca_counts:
            found.append(f"HCAs found {sorted(set(self.hca_counts))}")
        if self.tcp_listens:
            found.append(f"TCP transport listening x{self.tcp_listens}")
        if self.no_gid:
            found.append(f"no suitable GID on {', '.join(sorted(set(self.no_gid)))}")
        if self.rdma_failed:
            found.append("RDMA transport failed to install")
        if self.rdma_installed:
            found.append(f"RDMA installed x{self.rdma_installed}")
        if not found:
            found.append(f"no Mooncake transport lines in {self.lines_read} log lines")
        return f"{self.role}: {self.verdict} ({'; '.join(found)})"

    def to_dict(self) -> dict:
        return {
            "verdict": self.verdict,
            "devices": dict(sorted(self.devices.items())),
            "gid_states": dict(sorted(self.gid_states.items())),
            "rdma_installed": self.rdma_installed,
            "hca_counts": self.hca_counts,
            "force_tcp": self.force_tcp,
            "tcp_listens": self.tcp_listens,
            "no_suitable_gid": sorted(set(self.no_gid)),
            "summary": self.describe(),
        }


def scan(role: str, text: str) -> ServerTransport:
    st = ServerTransport(role)
    for line in text.splitlines():
        st.lines_read += 1
        if _RDMA_INSTALLED.search(line):
            st.rdma_installed += 1
        if m := _RDMA_DEVICE.search(line):
            st.devices[m["dev"]] = int(m["gid"])
        if m := _BEST_GID.search(line):
            st.devices.setdefault(m["dev"], int(m["gid"]))
            if m["state"]:
                st.gid_states[m["dev"]] = m["state"]
        if m := _HCAS.search(line):
            st.hca_counts.append(int(m["n"]))
        if _FORCE_TCP.search(line):
            st.force_tcp += 1
        if _TCP_LISTEN.search(line):
            st.tcp_listens += 1
        if m := _NO_GID.search(line):
            st.no_gid.append(f"{m['dev']}/{m['port']}")
        if _RDMA_FAILED.search(line):
            st.rdma_failed += 1
    return st


@dataclass(frozen=True)
class TransportProof:
    servers: tuple[ServerTransport, ...]

    @property
    def proven(self) -> bool:
        return bool(self.servers) and all(s.verdict == "rdma" for s in self.servers)

    def describe(self) -> str:
        return "; ".join(s.describe() for s in self.servers)

    def to_dict(self) -> dict:
        return {"proven": self.proven, "servers": {s.role: s.to_dict() for s in self.servers}}


def prove(logs: dict[str, str]) -> TransportProof:
    """``logs``: role (prefill, decode) -> log text."""
    return TransportProof(tuple(scan(role, text) for role, text in logs.items()))


FIX_HINT = (
    "make RDMA visible in both containers (/dev/infiniband devices, IPC_LOCK, memlock unlimited, host network), "
    "unset MC_FORCE_TCP, set MC_GID_INDEX if no suitable GID is found, and check with `pdrepro doctor`"
)
