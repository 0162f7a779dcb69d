"""What a run's own files say about the KV transport, whatever the sweep was told to check.

Every record of the run that bears on it is read, and each is a source that speaks only for the node it
was taken on:

* the transfer backend's start-up lines in every server's log, read by the run's backend: the transport
  each server's backend installed and the RDMA devices it found, read for every run (also one whose sweep skipped its proof);
* the sweep's proof (provenance.json "transport"), when it ran one;
* the nodes' device lists: each counter reading lists the devices of its node's /sys/class/infiniband
  (counters/<L>.json "rdma_devices") and the ports it read; provenance.json host.nics lists those of the
  host the sweep ran on.

The sweep's host speaks for a server's node only where the run proves they are one machine: the sweep
reached the server on a loopback address or at an address it recorded as its own (host.addresses), or
the stack record beside the run (stack.json, written by `pdrepro stack up` on the servers' host) has the
boot id the sweep recorded for its host and started that server. A name that merely matches proves
nothing (a hosts file can point it anywhere), and neither does "the sweep runs on the decode node".

A source that was not read abstains. "No RDMA device on the node" is only ever what every list of that
node says, never a guess: a node nobody looked at leaves the answer open (None) and the checks then hold
the run to the NIC witness. Two sources that disagree (two lists of one node, an engine that found an
HCA on a node whose list is empty, ports outside their own record's device list, a proof that says RDMA
where the logs say TCP) are written down as conflicts, which the transport check fails naming both; while
any stands, "not applicable" is never the answer. Evidence of the wrong JSON type is no evidence
at all, and it is refused (UserError, exit 2), never skipped.
"""

from __future__ import annotations

import ipaddress
from typing import Any
from urllib.parse import urlsplit

from ..backends import TransferBackend
from ..backends import TransportReading as ServerTransport
from ..core import runfile
from ..core.errors import UserError
from ..core.roles import SERVER_ROLES
from ..rundir import RunDir
from .foreign_lines import other_backends_rdma

ROLES = SERVER_ROLES
STACK_FILE = "stack.json"
# How sweep.counters names a reading taken from the sweep host's own sysfs: it is that host's list,
# which is the decode node's only where the run proves the decode server ran there.
SWEEP_HOST_MARK = "(the host running the sweep)"


def _malformed(where: str, what: str, fix: str = "restore the file the sweep wrote, or rerun `pdrepro sweep`") -> UserError:
    return UserError(f"{where}: {what}, which no `pdrepro` writer records; the transport cannot be judged from "
                     f"evidence of the wrong type: {fix}")


def _str_list(value: Any, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _malformed(where, f"is {type(value).__name__}, not a list of device names")
    return value


def _server_logs(run: RunDir, backend: TransferBackend) -> dict[str, ServerTransport]:
    """Each server log's transport lines as the run's backend reads them (its latest start only), by the log's
    name (prefill, prefill-1, ...)."""
    seen: dict[str, ServerTransport] = {}
    for role in ROLES:
        for path in run.role_logs(role):
            try:
                seen[path.stem] = backend.scan_latest_start(path.stem, runfile.lines(path))
            except OSError:
                continue
    return seen


def engine_transport(run: RunDir, seen: dict[str, ServerTransport]) -> tuple[str | None, dict[str, str]]:
    """(what every server's engine used, per server the line that says so).

    "rdma" or "tcp" when all servers agree, "mixed" when they do not, "unknown" when a
    log shows neither (or a broken RDMA start); None when the run holds no server log."""
    servers = {name: st.describe() for name, st in seen.items()}
    verdicts = {st.verdict for st in seen.values()}
    if not servers:
        return None, servers
    if verdicts <= {"rdma"} or verdicts <= {"tcp"}:
        return verdicts.pop(), servers
    if verdicts <= {"rdma", "tcp"}:
        return "mixed", servers
    return "unknown", servers


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class _Host:
    """What provenance.json says of the sweep's host, each part checked for its type."""

    def __init__(self, provenance: dict | None, where: str):
        prov = provenance or {}
        host = prov.get("host", {})
        if host is None:
            host = {}
        if not isinstance(host, dict):
            raise _malformed(f"{where} host", f"is {type(host).__name__}, not an object")
        name = host.get("hostname")
        self.name: str = name if isinstance(name, str) else "the sweep's host"
        nics = host.get("nics")
        if nics is not None and not isinstance(nics, dict):
            raise _malformed(f"{where} host.nics", f"is {type(nics).__name__}, not an object of devices")
        self.nics: set[str] | None = None if nics is None else {str(n) for n in nics}
        addresses = host.get("addresses")
        self.addresses = set(_str_list(addresses, f"{where} host.addresses")) if addresses is not None else set()
        boot = host.get("boot_id")
        if boot is not None and not isinstance(boot, str):
            raise _malformed(f"{where} host.boot_id", f"is {type(boot).__name__}, not text")
        self.boot_id = boot
        endpoints = prov.get("endpoints")
        if endpoints is None:
            endpoints = {}
        if not isinstance(endpoints, dict) or not all(isinstance(v, str) or v is None for v in endpoints.values()):
            raise _malformed(f"{where} endpoints", "is not an object of role -> URL")
        self.endpoints: dict[str, str | None] = endpoints
        # A host the sweep recorded without a GPU (nvidia-smi absent or failing, or listing none) is not the node of
        # a server that says it runs on one, whatever address reached it (a tunnel on loopback, a forwarded port).
        gpu = host.get("gpu")
        self.gpuless = isinstance(gpu, dict) and (bool(gpu.get("error")) or gpu.get("gpus") == [])
        info = prov.get("server_info")
        self.accelerated: set[str] = {
            str(role) for role, facts in (info.items() if isinstance(info, dict) else ())
            if isinstance(facts, dict) and isinstance(facts.get("device"), str) and facts["device"] != "cpu"}


def _stack_roles(run: RunDir, boot_id: str | None) -> tuple[set[str], str | None]:
    """Roles the stack record beside the run started on the host with ``boot_id`` (none without a match)."""
    path = run.root / STACK_FILE
    if boot_id is None or not path.is_file():
        return set(), None
    try:
        data = runfile.read_json(path)
    except (OSError, ValueError):
        raise _malformed(str(path), "is not JSON", "restore the record `pdrepro stack up` wrote, or move it aside") from None
    if not isinstance(data, dict) or not isinstance(data.get("boot_id"), str) \
            or not isinstance(data.get("processes", []), list) \
            or not all(isinstance(p, dict) for p in data.get("processes", [])):
        raise _malformed(str(path), "holds no boot_id text and list of processes",
                         "restore the record `pdrepro stack up` wrote, or move it aside")
    if data["boot_id"] != boot_id:
        return set(), None
    return {str(p.get("role")) for p in data["processes"]}, f"{STACK_FILE} boot id {boot_id[:8]}"


def _same_machine(run: RunDir, host: _Host) -> dict[str, str]:
    """Roles whose server the run proves ran on the sweep's host, with the proof."""
    stacked, stack_proof = _stack_roles(run, host.boot_id)
    out: dict[str, str] = {}
    for role in ROLES:
        name = urlsplit(host.endpoints.get(role) or "").hostname
        if host.gpuless and role in host.accelerated:
            continue  # the server runs on a GPU the sweep's host does not have: another machine, its lists abstain
        if name and _is_loopback(name):
            out[role] = f"reached at {name}"
        elif name and name in host.addresses:
            out[role] = f"reached at {name}, an address of the sweep's host"
        elif role in stacked and stack_proof:
            out[role] = f"started there ({stack_proof})"
    return out


class _Lists:
    """Per role, the device lists its node's sources give: (label, devices)."""

    def __init__(self) -> None:
        self.node: dict[str, list[tuple[str, frozenset[str]]]] = {role: [] for role in ROLES}
        self.conflicts: list[str] = []

    def add(self, role: str, label: str, devices: set[str]) -> None:
        self.node[role].append((label, frozenset(devices)))


def _show(devices: frozenset[str] | set[str]) -> str:
    return f"[{', '.join(sorted(devices))}]" if devices else "no RDMA device"


def _sources(found: list[tuple[str, frozenset[str]]]) -> str:
    """The sources of one node's lists, each once: the counter records of every length read at one place are one."""
    names: dict[str, list[str]] = {}
    for label, _ in found:
        head, _, rest = label.partition(" ")
        if head.startswith("counters/"):
            names.setdefault(f"counters {rest}", []).append(head.removeprefix("counters/"))
        else:
            names.setdefault(label, [])
    return "; ".join(f"{key} [{', '.join(sorted(files))}]" if files else key for key, files in names.items())


def _counter_lists(run: RunDir, lists: _Lists, sweep_host: dict[str, str], host_name: str) -> None:
    if not run.counters_dir.is_dir():
        return
    for path in sorted(run.counters_dir.glob("*.json")):
        try:
            data = runfile.read_json(path)
        except (OSError, UnicodeDecodeError, ValueError):
            continue  # the witness files the unreadable record as an error of its own
        if not isinstance(data, dict) or not isinstance(data.get("nodes"), dict):
            continue  # likewise
        for role in ROLES:
            node = data["nodes"].get(role)
            if node is None:
                continue
            where = f"{path} nodes.{role}"
            if not isinstance(node, dict):
                raise _malformed(where, f"is {type(node).__name__}, not a node's readings")
            source = node.get("source")
            if source is not None and not isinstance(source, str):
                raise _malformed(f"{where}.source", f"is {type(source).__name__}, not text")
            ports: set[str] = set()
            for side in ("before", "after"):
                reading = node.get(side)
                if reading is None:
                    continue
                if not isinstance(reading, dict) or not isinstance(reading.get("ports", {}), dict):
                    raise _malformed(f"{where}.{side}", "is not a reading with an object of ports")
                ports |= {str(p).split("/", 1)[0] for p in reading.get("ports", {})}
            listed = set(_str_list(node["rdma_devices"], f"{where}.rdma_devices")) if "rdma_devices" in node else None
            if listed is not None and not ports <= listed:
                lists.conflicts.append(f"{path.name}: the {role} node's counters read ports of {_show(ports - listed)}, "
                                       f"but the same record lists {_show(listed)} on the node")
            devices = listed if listed is not None else (ports or None)
            if devices is None:
                continue
            if source and SWEEP_HOST_MARK in source:
                if role not in sweep_host:
                    continue  # the sweep host's list, and nothing proves the server ran there: it abstains
                label = f"counters/{path.name} (the sweep's host {host_name}, {sweep_host[role]})"
            else:
                label = f"counters/{path.name} ({source or 'its node'})"
            lists.add(role, label, devices)


def _proof_conflicts(proof: Any, used: str | None, seen: dict[str, ServerTransport], where: str) -> list[str]:
    """Where the sweep's proof says another transport than the servers' logs (it read the same lines)."""
    if proof is None:
        return []
    if not isinstance(proof, dict):
        raise _malformed(f"{where} transport", f"is {type(proof).__name__}, not the sweep's proof")
    if proof.get("skipped"):
        return []
    proven, servers = proof.get("proven"), proof.get("servers", {})
    if proven is not None and not isinstance(proven, bool):
        raise _malformed(f"{where} transport.proven", f"is {type(proven).__name__}, not true or false")
    if not isinstance(servers, dict) or not all(isinstance(s, dict) and isinstance(s.get("verdict", ""), str)
                                                for s in servers.values()):
        raise _malformed(f"{where} transport.servers", "is not an object of role -> {verdict: text}")
    out = []
    # A server entry naming no verdict abstains (the proof of an older sweep kept only its summary line).
    said = {role: s["verdict"] for role, s in servers.items() if isinstance(s.get("verdict"), str)}
    if proven and any(v != "rdma" for v in said.values()):
        out.append(f"{where}: the proof calls RDMA proven while its own servers say "
                   + ", ".join(f"{r} {v}" for r, v in sorted(said.items())))
    if proven and used in ("tcp", "mixed"):  # "unknown": the logs hold no start-up line, they abstain
        out.append(f"{where}: the sweep's proof says RDMA, the servers' logs say {used}")
    for role, verdict in sorted(said.items()):
        logged = seen.get(role)
        if logged is not None and verdict in ("rdma", "tcp") and logged.verdict in ("rdma", "tcp") \
                and verdict != logged.verdict:
            out.append(f"{where}: the proof says the {role} engine used {verdict}, its log says {logged.verdict}")
    return out


def rdma_devices(run: RunDir, provenance: dict | None, seen: dict[str, ServerTransport],
                 backend: TransferBackend, foreign: dict[str, set[str]] | None = None) -> dict:
    """{"found": True (devices seen) | False (every node's every list is empty, no source disagreeing) | None,
    "devices": {role: [names]}, "evidence": [where each role's answer comes from], "conflicts": [...]}."""
    host = _Host(provenance, str(run.provenance_file))
    sweep_host = _same_machine(run, host)
    lists = _Lists()
    _counter_lists(run, lists, sweep_host, host.name)
    if host.nics is not None:
        for role, proof in sweep_host.items():
            lists.add(role, f"provenance.json host.nics of {host.name} ({proof})", host.nics)
    for role in ROLES:
        known = lists.node[role]
        for label, other in known[1:]:
            if other != known[0][1]:
                lists.conflicts.append(f"the {role} node: {known[0][0]} lists {_show(known[0][1])}, {label} "
                                       f"lists {_show(other)}")
                break
    engines: dict[str, set[str]] = {}
    for name, st in sorted(seen.items()):
        engine = backend.found_devices(st)
        if engine is None:
            continue
        role = name.split("-", 1)[0]
        engines.setdefault(role, set()).update(engine)
        empty = [label for label, listed in lists.node.get(role, []) if not listed]
        if engine and empty:
            lists.conflicts.append(f"the {name} engine's log found {_show(engine)}, but {empty[0]} lists no RDMA "
                                   "device on its node")
    for role, found_there in (foreign or {}).items():
        engines.setdefault(role, set()).update(found_there or {"RDMA"})
    devices: dict[str, list[str]] = {role: sorted(set().union(*(d for _, d in lists.node[role])))
                                     for role in ROLES if lists.node[role]}
    found: bool | None
    if any(devices.values()) or any(engines.values()):
        found = True
    elif lists.conflicts or not all(lists.node[role] for role in ROLES):
        found = None
    else:
        found = False
    evidence = [f"{role}: {_sources(lists.node[role])}" if lists.node[role]
                else f"{role}: no record of its RDMA devices" for role in ROLES]
    return {"found": found, "devices": devices, "evidence": sorted(evidence), "conflicts": lists.conflicts}


def transport_facts(run: RunDir, provenance: dict | None, backend: TransferBackend) -> tuple[str | None, dict]:
    """(the engine's transport, the evidence the checks judge it by) for summary.json; ``backend`` is the
    run's (scenario.seams.run_backend), which reads its own lines in the server logs."""
    seen = _server_logs(run, backend)
    used, servers = engine_transport(run, seen)
    proof = (provenance or {}).get("transport")
    foreign_conflicts, foreign = other_backends_rdma(run, backend)
    devices = rdma_devices(run, provenance, seen, backend, foreign)
    conflicts = _proof_conflicts(proof, used, seen, str(run.provenance_file)) + devices["conflicts"] + foreign_conflicts
    devices["conflicts"] = conflicts
    if conflicts and devices["found"] is False:
        devices["found"] = None  # sources that disagree prove no absence
    return used, {"servers": servers, "proof": proof if isinstance(proof, dict) else None,
                  "rdma_devices": devices, "conflicts": conflicts, "backend": backend.name}
