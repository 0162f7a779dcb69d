"""The report's provenance section: a summary a person reads, not the records themselves.

provenance.json keeps everything the sweep recorded (both servers' whole
/server_info, every library and package it looked for); the report names what
decides how a run is read: where and when it ran, what served it, how the
engines moved the KV, and, in one table, what ran against docker/versions.env.
"""

from __future__ import annotations

import json

from tabulate import tabulate

from ..rundir.summarymodel import GpuFacts, HostFacts, RunProvenance, ServerInfo, Summary, TransportProof, WhatRan
from ..scenario.seams import summary_backend, summary_engine


def _host(prov: RunProvenance) -> str:
    host = prov.host if isinstance(prov.host, HostFacts) else HostFacts()
    gpu = host.gpu or GpuFacts()
    gpus = ", ".join(gpu.gpus or []) or "none seen"
    driver = f"driver {gpu.driver}, CUDA {gpu.cuda}" if gpu.driver else gpu.error or "no driver seen"
    nics = host.nics
    rdma = ", ".join(sorted(nics)) if nics else "none" if isinstance(nics, dict) else "not recorded"
    return (f"{host.hostname} (kernel {host.kernel}); GPUs: {gpus} ({driver}); "
            f"RDMA devices: {rdma}")


def _server(role: str, info: ServerInfo | str | None, engine_label: str) -> str:
    if not isinstance(info, ServerInfo):
        return f"{role}: /server_info not recorded"
    if info.error is not None and info.version is None:
        return f"{role}: /server_info not read ({info.error})"
    args = ", ".join(f"{k} {v}" for k, v in info.setup())
    return f"{role}: {engine_label} {info.version or '?'}; {args}"


def _proof(transport: TransportProof | None) -> str:
    if transport is None:
        return "not recorded"
    if transport.skipped:
        return "not run (--no-transport-proof)"
    servers = "; ".join(s.summary for s in transport.servers.values())
    return f"{'RDMA proven' if transport.proven else 'not RDMA'}: {servers or 'no server logs'}"


def what_ran_table(rows: list[WhatRan]) -> list[str]:
    if not rows:
        return []
    differ = [r for r in rows if r.match is False]
    head = (f"{len(differ)} of {len(rows)} components differ from docker/versions.env: this run is not the pinned "
            "software." if differ else "What ran matches docker/versions.env where the run recorded it.")
    table = [[r.item, r.ran or "not recorded", r.pinned or "no pin",
              {True: "yes", False: "**no**", None: "unknown"}[r.match], r.source] for r in rows]
    return [head, "", tabulate(table, headers=["Component", "Ran", "Pinned", "Matches", "Read from"],
                                tablefmt="github", disable_numparse=True), ""]


def _smoke_lines(prov: RunProvenance) -> list[str]:
    """The smoke records a few flat facts of its own: each as one line."""
    return [f"- {key}: {value if isinstance(value, str) else json.dumps(value, sort_keys=True)}"
            for key, value in sorted(prov.facts().items())]


def provenance_section(summary: Summary) -> list[str]:
    prov = summary.provenance
    if prov is None or not prov.recorded():
        return []
    engine = summary_engine(summary)
    if engine is None:
        return ["## Provenance", "", *_smoke_lines(prov), ""]
    backend = summary_backend(summary)
    recorded_pins = prov.pins.model_dump() if prov.pins is not None else {}
    pinned = ", ".join(f"{label} {str(recorded_pins.get(key))[:12]}"
                       for label, keys in ((engine.label, engine.pin_keys), (backend.label, backend.pin_keys))
                       for key in keys)
    env = prov.environment or {}
    bench = prov.bench_image
    logs = prov.logs
    scenario = prov.scenario
    bench_text = ("not recorded" if bench is None else "in place, " + str(bench.python) if bench.in_place
                  else str(bench.image or "not recorded"))
    lines = [
        f"- recorded: {prov.recorded_at or '?'}, scenario {(scenario.name if scenario else None) or '?'} "
        f"(fingerprint {str((scenario.fingerprint if scenario else None) or '?')[:12]})",
        f"- host running the sweep: {_host(prov)}",
        "- endpoints: " + ", ".join(f"{k} {v}" for k, v in sorted((prov.endpoints or {}).items())),
        *[f"- {_server(role, info, engine.label)}" for role, info in sorted((prov.server_info or {}).items())],
        "- bench client: " + bench_text,
        f"- server logs: {logs.kind if logs else 'not recorded'} {(logs.folder if logs else None) or ''}".rstrip(),
        "- environment: " + (", ".join(f"`{k}={v}`" for k, v in env.items())
                             or f"no {engine.label}, {backend.label} or shared variables"),
        f"- transport proof: {_proof(prov.transport)}",
        f"- pins: {pinned or 'none named'}",
    ]
    return ["## Provenance", "", *lines, "", *what_ran_table(summary.what_ran or []),
            "The full records (both servers' /server_info, every package, library and kernel module looked for) "
            "are in provenance.json.", ""]
