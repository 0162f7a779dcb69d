"""What a run's own files say about the KV transport, whatever the sweep was told to check.

Three records, all written during the run:

* the engine's start-up lines in every server's log (mooncake_log): the
  transport each Mooncake engine installed, read here for every run, also one
  whose sweep skipped its proof (--no-transport-proof);
* the sweep's proof (provenance.json "transport"), when it ran one;
* whether the nodes had RDMA devices at all: each counter reading lists the
  devices of its node's /sys/class/infiniband (counters/<L>.json
  "rdma_devices"), and provenance.json's host.nics lists those of the host the
  sweep ran on (the decode node, where the sweep runs; a server reached on a
  loopback address, by that host's name or at an address the sweep recorded as
  its own, host.addresses, runs there too).

"No RDMA device on the node" is only ever this evidence, never a guess: a node
nobody looked at leaves the answer open (None), and the checks then hold the
run to the NIC witness.
"""

from __future__ import annotations

import ipaddress
import json
from urllib.parse import urlsplit

from ..core.roles import SERVER_ROLES, Role
from ..parsers.mooncake_log import scan
from ..parsers.serverstart import current_start
from ..rundir import RunDir

ROLES = SERVER_ROLES


def engine_transport(run: RunDir) -> tuple[str | None, dict[str, str]]:
    """(what every server's engine used, per server the line that says so).

    "rdma" or "tcp" when all servers agree, "mixed" when they do not, "unknown" when a
    log shows neither (or a broken RDMA start); None when the run holds no server log."""
    servers: dict[str, str] = {}
    verdicts = set()
    for role in ROLES:
        for path in run.role_logs(role):
            try:
                text = path.read_text(errors="replace")
            except OSError:
                continue
            seen = scan(path.stem, current_start(text))
            servers[path.stem] = seen.describe()
            verdicts.add(seen.verdict)
    if not servers:
        return None, servers
    if verdicts <= {"rdma"} or verdicts <= {"tcp"}:
        return verdicts.pop(), servers
    if verdicts <= {"rdma", "tcp"}:
        return "mixed", servers
    return "unknown", servers


def _on_sweep_host(url: str | None, hostname: str | None, own: list[str]) -> bool:
    """A server reached on a loopback address, by the sweep host's own name or at one of the addresses
    the sweep recorded as its host's own (provenance.json host.addresses) runs on that host."""
    host = urlsplit(url or "").hostname
    if host == "localhost" or (host and hostname and host.lower() == hostname.lower()) or (host and host in own):
        return True
    try:
        return ipaddress.ip_address(host or "").is_loopback
    except ValueError:
        return False


def _counter_records(run: RunDir) -> list[dict]:
    if not run.counters_dir.is_dir():
        return []
    out = []
    for path in sorted(run.counters_dir.glob("*.json")):
        try:
            data = json.loads(path.read_text())
        except (OSError, UnicodeDecodeError, ValueError):
            continue  # the witness files the unreadable record as an error of its own
        if isinstance(data, dict) and isinstance(data.get("nodes"), dict):
            out.append(data)
    return out


def _node_devices(node: dict) -> list[str] | None:
    """Devices a counter record saw on its node; None where it did not look."""
    if isinstance(node.get("rdma_devices"), list):
        return [str(d) for d in node["rdma_devices"]]
    ports = [p for side in ("before", "after") for p in ((node.get(side) or {}).get("ports") or {})]
    return sorted({p.split("/", 1)[0] for p in ports}) if ports else None


def rdma_devices(run: RunDir, provenance: dict | None) -> dict:
    """{"found": True (devices seen) | False (every node seen, none has one) | None (not known),
    "devices": {role: [names]}, "evidence": [where each role's answer comes from]}."""
    seen: dict[str, list[str]] = {}
    evidence: dict[str, str] = {}
    for record in _counter_records(run):
        for role in ROLES:
            node = record["nodes"].get(role)
            devices = _node_devices(node) if isinstance(node, dict) else None
            if devices is not None:
                seen[role] = sorted(set(seen.get(role, [])) | set(devices))
                evidence.setdefault(role, f"counters/{record.get('prompt_len')}.json ({node.get('source')})")
    prov = provenance or {}
    nics = (prov.get("host") or {}).get("nics")
    if isinstance(nics, dict):
        host = (prov.get("host") or {}).get("hostname") or "the sweep's host"
        endpoints = prov.get("endpoints") or {}
        # The sweep runs on the decode node; a server it reaches on a loopback address or by
        # that host's name runs there too.
        on_host = [role for role in ROLES
                   if role == Role.DECODE or _on_sweep_host(endpoints.get(role), (prov.get("host") or {}).get("hostname"),
                                                         list((prov.get("host") or {}).get("addresses") or []))]
        for role in on_host:
            seen[role] = sorted(set(seen.get(role, [])) | set(nics))
            evidence.setdefault(role, f"provenance.json host.nics of {host} (its /sys/class/infiniband)")
    found: bool | None
    if any(seen.values()):
        found = True
    elif all(role in seen for role in ROLES):
        found = False
    else:
        found = None
    unseen = [role for role in ROLES if role not in seen]
    return {"found": found, "devices": {role: seen[role] for role in sorted(seen)},
            "evidence": [f"{role}: {evidence[role]}" for role in sorted(evidence)]
            + [f"{role}: no record of its RDMA devices" for role in unseen]}


def transport_facts(run: RunDir, provenance: dict | None) -> tuple[str | None, dict]:
    """(the engine's transport, the evidence the checks judge it by) for summary.json."""
    used, servers = engine_transport(run)
    proof = (provenance or {}).get("transport")
    return used, {"servers": servers, "proof": proof if isinstance(proof, dict) else None,
                  "rdma_devices": rdma_devices(run, provenance)}

