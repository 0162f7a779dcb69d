"""TCP fallback: the KV moved over TCP (or over TCP on some servers) where RDMA carries it in the published run.
Each server log is read by the run's own backend (scenario.seams.run_backend: Mooncake's start-up lines, NIXL's
UCX lanes), its latest start only, and its evidence lines are cited by file and line; the NIC witness' share of
the KV the counters saw is cited with them. Over TCP none of the KV takes the RDMA path, so the cause can account
for the whole gap. A run whose KV never met a fabric (a box without an RDMA device, a scenario allowing TCP) rules
the cause out: TCP is its path."""

from __future__ import annotations

from pathlib import Path

from ...backends.base import TransferBackend
from ...core import runfile
from ...core.errors import UserError
from ...core.roles import SERVER_ROLES
from ...rundir.diagnosismodel import EvidenceItem
from ...scenario.seams import run_backend
from ..evidence import Member, RunEvidence
from ..gaps import Gaps
from .base import Answer, Cause, Cleared, Finding, Missing, item
from .loglines import numbered

TCP_FIX = {
    "mooncake": "let the transfer engine find the RDMA devices: unset MC_FORCE_TCP, pass the NICs with "
                "--disaggregation-ib-device (or MC_TE_FILTERS), and run `pdrepro doctor` on both nodes "
                "(/dev/infiniband in the containers, a GID with a network device)",
    "nixl": "let UCX use the RDMA devices: set UCX_TLS to include rc (or leave it unset) and UCX_NET_DEVICES to the "
            "NICs, and run `pdrepro doctor` on both nodes",
}


# UCX transports that reach a NIC's RDMA queues; a UCX_TLS naming none of them keeps the KV off RDMA by choice.
_UCX_RDMA = {"rc", "rc_v", "rc_x", "rc_verbs", "rc_mlx5", "ud", "ud_v", "ud_x", "ud_verbs", "ud_mlx5", "dc", "dc_x",
             "dc_mlx5", "ib", "all"}


def chose_tcp(reading: object, backend: TransferBackend) -> str | None:
    """What in the server's own evidence asked for TCP (so it is no fallback), or None: a backend that only moves
    TCP, MC_FORCE_TCP (logged, or set in the engine's environment), or a UCX_TLS without an RDMA transport."""
    if backend.tcp_only:
        return f"the {backend.name} backend moves the KV over TCP by design"
    if getattr(reading, "force_tcp", 0) or getattr(reading, "force_tcp_set", False):
        return "MC_FORCE_TCP was set"
    tls = getattr(reading, "ucx_tls", None)
    if isinstance(tls, str) and not {t.strip() for t in tls.split(",")} & _UCX_RDMA:
        return f"UCX_TLS={tls} names no RDMA transport"
    return None


def readings(ev: RunEvidence, m: Member) -> list[tuple[Path, str, list[str], TransferBackend, str | None]]:
    """(log, verdict, evidence lines, backend, what asked for TCP) for each server log of ``m`` its backend reads."""
    if m.scenario is None:
        return []
    try:
        backend = run_backend(m.run.root, m.scenario)
    except UserError:
        return []
    out = []
    for role in SERVER_ROLES:
        for path in m.run.role_logs(role):
            try:
                reading = backend.scan_latest_start(path.stem, runfile.lines(path))
            except (OSError, ValueError):
                continue
            out.append((path, reading.verdict, list(getattr(reading, "evidence", []) or []), backend,
                        chose_tcp(reading, backend)))
    return out


def _nic_items(ev: RunEvidence, m: Member) -> list[EvidenceItem]:
    s = m.summary
    if s is None:
        return []
    # A smoke's rows count no NIC share (their model has no such field): only rows that carry one are cited.
    shares = [(r.prompt_len, share) for r in s.rows
              if isinstance(share := getattr(r, "nic_kv_share_pct", None), (int, float))]
    return [item("counter", ev.rel(m.run.counters_file(L)),
                 f"{m.rel} at {L} tokens: the RDMA ports counted {share:.1f}% of the KV") for L, share in shares][:2]


class TcpFallback(Cause):
    name = "tcp fallback"

    def read(self, ev: RunEvidence, gaps: Gaps) -> Answer:
        tcp: list[EvidenceItem] = []
        rdma: list[str] = []
        backends: set[str] = set()
        chosen: set[str] = set()  # what asked for TCP, where the servers' evidence says so
        fell_back = False
        where: list[str] = []
        boxed: list[str] = []  # TCP logs of runs whose KV never met a fabric: their path, not a fallback
        for m in ev.log_runs():
            for path, verdict, lines, backend, asked in readings(ev, m):
                if verdict == "tcp" and m.no_fabric:
                    boxed.append(ev.rel(path))
                elif verdict == "tcp":
                    backends.add(backend.name)
                    if asked:
                        chosen.add(asked)
                    else:
                        fell_back = True
                    where.append(ev.rel(path))
                    cited = numbered(path, lines)
                    tcp += [item("log line", ev.rel(path), text, number) for number, text in cited]
                    if not cited:
                        tcp.append(item("log line", ev.rel(path), f"the {backend.name} reader: {verdict}"))
                elif verdict == "rdma":
                    rdma.append(ev.rel(path))
                    continue
                else:
                    continue
            if any(w.startswith(ev.rel(m.run.root)) or m.rel == "." for w in where):
                tcp += _nic_items(ev, m)
        if where:
            fix = "; ".join(TCP_FIX.get(b.split("_")[0], TCP_FIX["mooncake"]) for b in sorted(backends))
            asked = f"; chosen, not fallen back to, where {'; '.join(sorted(chosen))}" if chosen else ""
            return Finding(fault=fell_back, loss=gaps.largest,
                           summary=f"the KV moved over TCP ({', '.join(where[:6])}; backend {', '.join(sorted(backends))})"
                                   + (f", while {', '.join(rdma[:4])} used RDMA" if rdma else "") + asked,
                           evidence=tuple(tcp), fix=fix)
        if boxed:
            return Cleared(f"the KV moved over TCP ({', '.join(boxed[:6])}) on a box the sweep found without an RDMA "
                           "device, as the scenario allows (transport: any): no fabric to fall back from"
                           + (f"; {', '.join(rdma[:4])} used RDMA" if rdma else ""))
        if rdma:
            return Cleared(f"every server log read states RDMA ({', '.join(rdma[:6])})")
        return Missing("no server log states the transport (no logs/, or no transport lines in them): keep the "
                       "servers' logs in RUN/logs (`pdrepro sweep --logs-from`)")
