"""Where a run ran and over what, read from the run's own records, not from its scenario's words.

A scenario's title states a plan ("prefill and decode on two GPUs"); the run
records what happened: each server's /server_info (its mode and TP size), the
endpoints the sweep reached and the GPUs of the host that ran the sweep. The
report's title says what those records establish and nothing more.

Whether the run had a fabric at all is the verdicts' own rule (gates.tcp_without_rdma):
the engines used TCP and the sweep found no RDMA device on the nodes. Such a
run moved the KV inside one box through the kernel's TCP stack, so no NIC's
line rate describes it.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from ..rundir.summarymodel import HostFacts, RunProvenance, ServerInfo, Summary
from ..verdicts.gates import tcp_without_rdma

LOOPBACK = ("localhost", "::1")
MODES = ("prefill", "decode")


def no_fabric(summary: Summary) -> bool:
    """The run moved its KV over TCP with no RDMA device on its nodes: no line rate applies."""
    return tcp_without_rdma(summary, summary.scenario.transport)


def _servers(prov: RunProvenance) -> dict[str, ServerInfo]:
    """The prefill and decode servers whose /server_info was read, by role."""
    return {role: info for role, info in (prov.server_info or {}).items()
            if isinstance(info, ServerInfo) and info.disaggregation_mode in MODES}


def _host(url: str) -> str | None:
    try:
        return urlsplit(url).hostname
    except ValueError:  # a malformed endpoint records no host
        return None


def _is_loopback(host: str) -> bool:
    return host in LOOPBACK or host.startswith("127.")


def _tp(info: ServerInfo) -> int | None:
    tp = info.tp_size
    return tp if isinstance(tp, int) and not isinstance(tp, bool) and tp > 0 else None


def _count(n: int, one: str) -> str:
    words = {1: "one", 2: "two", 3: "three", 4: "four"}
    return f"{words.get(n, str(n))} {one}{'' if n == 1 else 's'}"


def _where(prov: RunProvenance, servers: dict[str, ServerInfo]) -> str | None:
    """Nodes and GPUs as the records establish them, or None where they establish neither."""
    hosts = [_host(url) for role, url in (prov.endpoints or {}).items() if role in servers]
    if len(hosts) != len(servers) or any(h is None for h in hosts):
        return None
    if all(_is_loopback(h) for h in hosts if h):
        # Every server answered on the sweep's own host: its GPU list is the node's.
        host = prov.host if isinstance(prov.host, HostFacts) else None
        gpus = len(host.gpu.gpus or []) if host else 0
        if gpus == 1:
            return "sharing the one GPU of one node"
        return f"on one node with {_count(gpus, 'GPU')}" if gpus else "on one node"
    nodes = len(set(hosts))
    if nodes == len(servers):
        tps = [_tp(info) for info in servers.values()]
        if all(tps):
            return f"on {_count(nodes, 'node')}, {_count(sum(t for t in tps if t), 'GPU')} in all"
    return f"on {_count(nodes, 'host')}"


def placement_title(summary: Summary) -> str | None:
    """"1P1D <model> at TP 1, prefill and decode sharing the one GPU of one node", from the run's records;
    None where the records do not say (the report then keeps the scenario's title)."""
    prov = summary.provenance
    if prov is None:
        return None
    servers = _servers(prov)
    modes = [info.disaggregation_mode for info in servers.values()]
    if not all(m in modes for m in MODES):
        return None
    # The sweep reads /server_info only of the servers it was pointed at (one prefill, one decode and any
    # --worker): fewer than the scenario planned is no count of what ran, so the plan's title stands.
    plan = summary.scenario.topology
    planned = {"prefill": plan.prefill, "decode": plan.decode} if plan else {}
    for mode, role in planned.items():
        count = role.servers() if role else None
        if count is not None and modes.count(mode) != count:
            return None
    where = _where(prov, servers)
    if where is None:
        return None
    tps = sorted({t for t in (_tp(i) for i in servers.values()) if t})
    tp = f" at TP {'/'.join(map(str, tps))}" if tps else ""
    model = summary.scenario.model.name if summary.scenario.model else None
    return (f"{modes.count('prefill')}P{modes.count('decode')}D{' ' + model if model else ''}{tp}, "
            f"prefill and decode {where}")
