"""Reads which transports NIXL's UCX backend used from a server's log.

SGLang logs ``NIXL KVManager initialized with backend: UCX`` once per server. UCX names the transports of
each endpoint configuration it builds when its log level is raised (``UCX_LOG_LEVEL=info``), one line per
configuration, from ucp_worker.c::

    [<sec>.<usec>] [<host>:<pid>:<thread>] ucp_worker.c:<line> UCX  INFO  <ctx> <scope> cfg#<n> <lanes>

where ``<scope>`` is ``self`` (the process's endpoint to itself), ``intra-node`` or ``inter-node`` (a
peer), and ``<lanes>`` is a list of ``<use>(<transport>/<device> ...)``: ``rma``/``rma_am`` (remote writes,
the lanes NIXL's KV writes take; ``_am`` when emulated over the active-message lane), ``amo``, ``am``,
``tag``, ``stream``, ``ka`` (keepalive). Older UCX wrote ``ep_cfg[<n>]:`` in place of scope and cfg#. The
line was recorded on an H200 (tests/recorded/h200-onebox-nixl-and-mooncake-*); UCX also prints which
UCX_* variables it read (``parser.c ... UCX_* env variables: UCX_TLS=...``).

What the transports mean: the verbs ones (rc_verbs, rc_mlx5, dc_mlx5, ud_verbs, ud_mlx5, rc_gda, and
EFA's srd) are RDMA; tcp is TCP; cuda_ipc, the shared-memory ones (posix, sysv, cma, knem, xpmem) and
rocm_ipc move bytes between processes inside one host without any network, and cuda_copy, gdr_copy and
self only inside one process. A peer endpoint whose remote-write lanes use an in-host transport moved no
byte over a network: that is "intra-host", which one box without ``UCX_TLS=tcp,cuda_copy`` produces (UCX
prefers CUDA IPC between two processes on one GPU). The self endpoint loops back by design, so its lanes
say nothing of peers unless they are network ones (then UCX_TLS left only those). A peer's lanes are
logged at its first transfer; before that only the self endpoint may be.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from .serverstart import START_MARKER

_INIT = re.compile(r"NIXL KVManager initialized with backend: (?P<backend>[A-Za-z0-9_.-]{1,32})")
_LANES = re.compile(r"ucp_worker\.c:\d+\s+UCX\s+INFO\s+(?P<body>.*)")
# "<ctx> <scope> cfg#<n> <lanes>" (UCX 1.15 on) or "ep_cfg[<n>]: <lanes>" (before)
_CFG = re.compile(r"(?:(?:^|\s)(?P<scope>self|intra-node|inter-node)\s+cfg#(?P<n>\d+)|\bep_cfg\[(?P<old>\d+)\]:)")
_LANE = re.compile(r"(?P<kind>[a-z_]{1,16})\((?P<tls>[^()]{0,512})\)")
_PAIR = re.compile(r"^(?P<tl>[a-z0-9_]{1,32})/(?P<dev>[^\s/()]{1,64})$")
_ENV = re.compile(r"parser\.c:\d+\s+UCX\s+INFO\s+UCX_\* env variables:.*?\bUCX_TLS=(?P<tls>\S{1,256})")

RDMA_TRANSPORTS = frozenset({"rc_verbs", "rc_mlx5", "dc_mlx5", "ud_verbs", "ud_mlx5", "rc_gda", "srd",
                             "rc", "ud", "dc"})  # the last three: names before UCX 1.8
TCP_TRANSPORTS = frozenset({"tcp"})
# Between processes of one host, no network.
IPC_TRANSPORTS = frozenset({"cuda_ipc", "rocm_ipc", "posix", "sysv", "cma", "knem", "xpmem"})
# Inside one process (memory-type copies and the loopback transport).
LOCAL_TRANSPORTS = frozenset({"cuda_copy", "gdr_copy", "rocm_copy", "ze_copy", "self"})
HOST_TRANSPORTS = IPC_TRANSPORTS | LOCAL_TRANSPORTS

VERDICTS = ("rdma", "tcp", "intra-host", "unknown")
# When a server's endpoints disagree, the weakest one speaks for it: one peer reached over TCP or inside
# the host is not a fabric measurement.
_WORST_FIRST = ("unknown", "intra-host", "tcp", "rdma")
_RMA_KINDS = ("rma", "rma_am", "rma_bw")

# Bounds on what one log may make the reader keep (a log is hostile until proven: it may be huge, or
# made to name millions of devices).
MAX_EVIDENCE = 48
MAX_NAMES = 64

FIX_INTRA_HOST = ("on one box set UCX_TLS=tcp,cuda_copy in both servers' environment so UCX moves the KV over "
                  "TCP (UCX_TLS=rc,cuda_copy for RDMA on a fabric)")
FIX_NO_LANES = "set UCX_LOG_LEVEL=info in both servers' environment so UCX names the transports it chose"


def _classify(transports: set[str]) -> str:
    """One endpoint configuration's verdict from the transports of its data lanes."""
    if not transports or transports - RDMA_TRANSPORTS - TCP_TRANSPORTS - HOST_TRANSPORTS:
        return "unknown"
    if transports & IPC_TRANSPORTS:
        return "intra-host"
    if transports & TCP_TRANSPORTS:
        return "tcp"
    if transports & RDMA_TRANSPORTS:
        return "rdma"
    return "intra-host"  # only in-process copies


def _worst(verdicts: Iterable[str]) -> str | None:
    found = set(verdicts)
    return next((v for v in _WORST_FIRST if v in found), None)


@dataclass
class NixlTransport:
    role: str
    backends: set[str] = field(default_factory=set)               # what NIXL initialised (UCX)
    # scope (self, intra-node, inter-node, peer for old lines) -> transport -> devices, from the lane lines
    scopes: dict[str, dict[str, set[str]]] = field(default_factory=dict)
    # (scope, verdict) of each distinct endpoint configuration
    configs: set[tuple[str, str]] = field(default_factory=set)
    ucx_tls: str | None = None                                    # UCX_TLS as UCX said it read it
    lines_read: int = 0
    evidence: list[str] = field(default_factory=list)             # lines of the log, as logged
    _seen: set[str] = field(default_factory=set, repr=False)

    @property
    def transports(self) -> dict[str, set[str]]:
        """Every transport UCX named for this server, with its devices (all scopes)."""
        out: dict[str, set[str]] = {}
        for tls in self.scopes.values():
            for tl, devs in tls.items():
                out.setdefault(tl, set()).update(devs)
        return out

    @property
    def verdict(self) -> str:
        """rdma, tcp, intra-host (no network carried the KV) or unknown (no lane lines, or none conclusive)."""
        peers = _worst(v for scope, v in self.configs if scope != "self")
        if peers is not None:
            return peers
        own = _worst(v for scope, v in self.configs if scope == "self")
        # The self endpoint loops back inside the process by design: only network lanes there say anything.
        return own if own in ("rdma", "tcp") else "unknown"

    def describe(self) -> str:
        verdict = self.verdict
        if not self.backends and not self.scopes:
            return (f"{self.role}: unknown (no NIXL or UCX lane lines in {self.lines_read} log lines; "
                    f"{FIX_NO_LANES})")
        head = f"{self.role}: {verdict} (NIXL backend {', '.join(sorted(self.backends)) or 'not logged'}"
        if self.ucx_tls is not None:
            head += f"; UCX_TLS={self.ucx_tls}"
        if not self.scopes:
            return f"{head}; UCX lanes not logged: {FIX_NO_LANES})"
        used = "; ".join(f"{scope}: " + ", ".join(f"{tl} ({', '.join(sorted(devs))})" for tl, devs in sorted(tls.items()))
                         for scope, tls in sorted(self.scopes.items()))
        tail = ""
        if verdict == "intra-host":
            tail = f"; no network carried the KV: {FIX_INTRA_HOST}"
        elif verdict == "unknown" and not any(scope != "self" for scope, _ in self.configs):
            tail = "; only UCX's own loopback endpoint is logged yet (a peer's lanes appear at its first transfer)"
        elif verdict == "unknown":
            tail = "; a transport the bundle does not know carried the KV"
        return f"{head}; UCX lanes {used}{tail})"

    def to_dict(self) -> dict:
        return {"verdict": self.verdict, "backends": sorted(self.backends), "ucx_tls": self.ucx_tls,
                "transports": {t: sorted(d) for t, d in sorted(self.transports.items())},
                "scopes": {s: {t: sorted(d) for t, d in sorted(tls.items())} for s, tls in sorted(self.scopes.items())},
                "summary": self.describe()}

    def _keep(self, line: str, key: str) -> None:
        if key not in self._seen and len(self.evidence) < MAX_EVIDENCE:
            self._seen.add(key)
            self.evidence.append(line)


def _scan_lanes(st: NixlTransport, line: str, body: str) -> None:
    cfg = _CFG.search(body)
    if cfg is None:
        return
    scope = cfg["scope"] or "peer"
    data: set[str] = set()
    named: set[str] = set()
    kinds: set[str] = set()
    tls = st.scopes.setdefault(scope, {})  # four scopes at most: self, intra-node, inter-node, peer
    for lane in _LANE.finditer(body, cfg.end()):
        kinds.add(lane["kind"])
        for pair in lane["tls"].split():
            m = _PAIR.match(pair)
            if m is None:
                continue
            named.add(m["tl"])
            if lane["kind"] in _RMA_KINDS:
                data.add(m["tl"])
            if m["tl"] in tls or len(tls) < MAX_NAMES:
                devs = tls.setdefault(m["tl"], set())
                if len(devs) < MAX_NAMES:
                    devs.add(m["dev"])
    if not named:
        return
    if not kinds & set(_RMA_KINDS):  # no remote-write lane: judge by every lane but the keepalive one
        data = {m["tl"] for lane in _LANE.finditer(body, cfg.end()) if lane["kind"] != "ka"
                for pair in lane["tls"].split() if (m := _PAIR.match(pair))}
    st.configs.add((scope, _classify(data)))
    st._keep(line, body[cfg.start():])


def _scan_line(st: NixlTransport, line: str) -> None:
    line = line.rstrip("\r\n")
    if "UCX" not in line and "NIXL" not in line:  # most lines of a server log: one cheap test
        return
    if m := _INIT.search(line):
        st.backends.add(m["backend"])
        st._keep(line, "init " + m["backend"])
    elif m := _LANES.search(line):
        _scan_lanes(st, line, m["body"])
    elif m := _ENV.search(line):
        st.ucx_tls = m["tls"]
        st._keep(line, "env " + m["tls"])


def scan(role: str, text: str) -> NixlTransport:
    """The transports named anywhere in ``text`` (the caller cuts it to one start: serverstart.current_start)."""
    st = NixlTransport(role)
    for line in text.splitlines():
        st.lines_read += 1
        _scan_line(st, line)
    return st


def scan_latest_start(role: str, lines: Iterable[str]) -> NixlTransport:
    """``scan`` over a log read line by line: only the server's latest start counts (an appended log holds
    earlier starts, which may have used other transports), and memory stays bounded whatever the log's size."""
    st = NixlTransport(role)
    for line in lines:
        if START_MARKER in line:
            st = NixlTransport(role)
        st.lines_read += 1
        _scan_line(st, line)
    return st
