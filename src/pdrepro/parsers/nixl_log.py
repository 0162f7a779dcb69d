"""Reads which transports NIXL's UCX backend used from a server's log.

SGLang logs ``NIXL KVManager initialized with backend: UCX`` once per server; UCX names the transports of
each endpoint's lanes when its log level is raised (``UCX_LOG_LEVEL=info``):
``ucp_worker.c:NNNN UCX  INFO  <name> intra-node cfg#2 rma_am(tcp/lo) amo_am(tcp/lo) am(tcp/lo tcp/eth0) ka(tcp/lo)``
(a transport/device pair per lane). RDMA transports are UCX's verbs ones (rc_verbs, rc_mlx5, dc_mlx5, ud_verbs,
ud_mlx5); tcp is TCP; cuda_copy, cuda_ipc and the shared-memory ones (posix, sysv, cma, knem, xpmem) move
bytes inside one host.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from .serverstart import START_MARKER

_INIT = re.compile(r"NIXL KVManager initialized with backend: (?P<backend>\S+)")
_LANES = re.compile(r"ucp_worker\.c:\d+\s+UCX\s+INFO\s+.*?\bcfg#\d+\s+(?P<lanes>.*)$")
_LANE = re.compile(r"(?P<kind>[a-z_]+)\((?P<tls>[^)]*)\)")
RDMA_TRANSPORTS = frozenset({"rc_verbs", "rc_mlx5", "dc_mlx5", "ud_verbs", "ud_mlx5", "rc", "ud", "dc"})
HOST_TRANSPORTS = frozenset({"cuda_copy", "cuda_ipc", "posix", "sysv", "cma", "knem", "xpmem", "self", "gdr_copy"})


@dataclass
class NixlTransport:
    role: str
    backends: list[str] = field(default_factory=list)        # what NIXL initialised (UCX)
    transports: dict[str, set[str]] = field(default_factory=dict)  # transport -> devices, from the lane lines
    lines_read: int = 0
    evidence: list[str] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        names = set(self.transports)
        if names & RDMA_TRANSPORTS:
            return "rdma"
        if "tcp" in names:
            return "tcp"
        return "unknown"

    def describe(self) -> str:
        if not self.backends and not self.transports:
            return f"{self.role}: unknown (no NIXL lines in {self.lines_read} log lines)"
        used = ", ".join(f"{t} ({', '.join(sorted(d))})" for t, d in sorted(self.transports.items()))
        return (f"{self.role}: {self.verdict} (NIXL backend {', '.join(sorted(set(self.backends))) or '?'}; UCX lanes "
                f"{used or 'not logged: set UCX_LOG_LEVEL=info'})")

    def to_dict(self) -> dict:
        return {"verdict": self.verdict, "backends": sorted(set(self.backends)),
                "transports": {t: sorted(d) for t, d in sorted(self.transports.items())}, "summary": self.describe()}


def _scan_line(st: NixlTransport, line: str) -> bool:
    if m := _INIT.search(line):
        st.backends.append(m["backend"])
    elif m := _LANES.search(line):
        for lane in _LANE.finditer(m["lanes"]):
            for pair in lane["tls"].split():
                tl, _, dev = pair.partition("/")
                st.transports.setdefault(tl, set()).add(dev)
    else:
        return False
    st.evidence.append(line.strip())
    return True


def scan(role: str, text: str) -> NixlTransport:
    st = NixlTransport(role)
    for line in text.splitlines():
        st.lines_read += 1
        _scan_line(st, line)
    return st


def scan_latest_start(role: str, lines: Iterable[str]) -> NixlTransport:
    st = NixlTransport(role)
    for line in lines:
        if START_MARKER in line:
            st = NixlTransport(role)
        st.lines_read += 1
        _scan_line(st, line)
    return st
