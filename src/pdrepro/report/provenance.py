"""The report's provenance section: a summary a person reads, not the records themselves.

provenance.json keeps everything the sweep recorded (both servers' whole
/server_info, every library and package it looked for); the report names what
decides how a run is read: where and when it ran, what served it, how the
engines moved the KV, and, in one table, what ran against docker/versions.env.
"""

from __future__ import annotations

import json

from tabulate import tabulate

# The server arguments that say how a server was set up for PD, in the order a reader wants them.
SERVER_ARGS = ("model_path", "tp_size", "disaggregation_mode", "disaggregation_transfer_backend",
               "mem_fraction_static", "attention_backend", "chunked_prefill_size", "page_size", "base_gpu_id")


def _get(data, *keys):
    for key in keys:
        data = data.get(key) if isinstance(data, dict) else None
    return data


def _host(prov: dict) -> str:
    host = prov.get("host") or {}
    gpu = host.get("gpu") or {}
    gpus = ", ".join(gpu.get("gpus") or []) or "none seen"
    driver = f"driver {gpu['driver']}, CUDA {gpu.get('cuda')}" if gpu.get("driver") else gpu.get("error") or "no driver seen"
    nics = host.get("nics")
    rdma = ", ".join(sorted(nics)) if nics else "none" if isinstance(nics, dict) else "not recorded"
    return (f"{host.get('hostname', '?')} (kernel {host.get('kernel', '?')}); GPUs: {gpus} ({driver}); "
            f"RDMA devices: {rdma}")


def _server(role: str, info) -> str:
    if not isinstance(info, dict):
        return f"{role}: /server_info not recorded"
    if "error" in info and "version" not in info:
        return f"{role}: /server_info not read ({info['error']})"
    args = ", ".join(f"{k} {info[k]}" for k in SERVER_ARGS if info.get(k) is not None)
    return f"{role}: SGLang {info.get('version', '?')}; {args}"


def _proof(transport) -> str:
    if not isinstance(transport, dict):
        return "not recorded"
    if transport.get("skipped"):
        return "not run (--no-transport-proof)"
    servers = "; ".join(s.get("summary", "") for s in (transport.get("servers") or {}).values())
    return f"{'RDMA proven' if transport.get('proven') else 'not RDMA'}: {servers or 'no server logs'}"


def what_ran_table(rows: list[dict]) -> list[str]:
    if not rows:
        return []
    differ = [r for r in rows if r.get("match") is False]
    head = (f"{len(differ)} of {len(rows)} components differ from docker/versions.env: this run is not the pinned "
            "software." if differ else "What ran matches docker/versions.env where the run recorded it.")
    table = [[r["item"], r.get("ran") or "not recorded", r.get("pinned") or "no pin",
              {True: "yes", False: "**no**", None: "unknown"}[r.get("match")], r.get("source", "")] for r in rows]
    return [head, "", tabulate(table, headers=["Component", "Ran", "Pinned", "Matches", "Read from"],
                                tablefmt="github", disable_numparse=True), ""]


def _smoke_lines(prov: dict) -> list[str]:
    """The smoke records a few flat facts of its own: each as one line."""
    return [f"- {key}: {value if isinstance(value, str) else json.dumps(value, sort_keys=True)}"
            for key, value in sorted(prov.items())]


def provenance_section(summary: dict) -> list[str]:
    prov = summary.get("provenance")
    if not prov:
        return []
    if summary.get("source") != "sglang":
        return ["## Provenance", "", *_smoke_lines(prov), ""]
    env = prov.get("environment") or {}
    bench = prov.get("bench_image") or {}
    logs = prov.get("logs") or {}
    scenario = prov.get("scenario") or {}
    lines = [
        f"- recorded: {prov.get('recorded_at', '?')}, scenario {scenario.get('name', '?')} "
        f"(fingerprint {str(scenario.get('fingerprint', '?'))[:12]})",
        f"- host running the sweep: {_host(prov)}",
        "- endpoints: " + ", ".join(f"{k} {v}" for k, v in sorted((prov.get("endpoints") or {}).items())),
        *[f"- {_server(role, info)}" for role, info in sorted((prov.get("server_info") or {}).items())],
        "- bench client: " + ("in place, " + str(bench.get("python")) if bench.get("in_place")
                              else str(bench.get("image") or "not recorded")),
        f"- server logs: {logs.get('kind', 'not recorded')} {logs.get('folder') or ''}".rstrip(),
        "- environment: " + (", ".join(f"`{k}={v}`" for k, v in env.items()) or "no MC_/SGLANG_/NCCL_ variables"),
        f"- transport proof: {_proof(prov.get('transport'))}",
        f"- pins: SGLang {str(_get(prov, 'pins', 'sglang_commit'))[:12]}, "
        f"Mooncake {str(_get(prov, 'pins', 'mooncake_commit'))[:12]}",
    ]
    return ["## Provenance", "", *lines, "", *what_ran_table(summary.get("what_ran") or []),
            "The full records (both servers' /server_info, every package, library and kernel module looked for) "
            "are in provenance.json.", ""]
