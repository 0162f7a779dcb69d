"""What ran, where: recorded in RUN/provenance.json next to the results."""

from __future__ import annotations

import os
import platform
import socket
import time
from pathlib import Path

import requests

from ..host import nvidia
from ..host import sysfs as host_sysfs
from ..pins import load_pins
from ..rundir import Provenance, RunDir
from ..versions_report import collect_versions

ENV_PREFIXES = ("MC_", "SGLANG_", "NCCL_")


def environment(env: dict[str, str] | None = None) -> dict[str, str]:
    env = os.environ if env is None else env
    return {k: v for k, v in sorted(env.items()) if k.startswith(ENV_PREFIXES)}


def server_info(url: str) -> dict | None:
    try:
        resp = requests.get(url.rstrip("/") + "/get_server_info", timeout=10)
        return resp.json() if resp.ok else {"error": f"HTTP {resp.status_code}"}
    except (requests.RequestException, ValueError) as exc:
        return {"error": type(exc).__name__}


def versions() -> dict:
    try:
        return collect_versions()
    except Exception as exc:  # a report of versions must not sink the run
        return {"error": f"{type(exc).__name__}: {exc}"}


def collect(*, scenario, endpoints: dict[str, str], bench_image: dict | None, containers: dict,
            transport: dict | None, log_source: dict | None, configuration: str | None,
            sysfs: Path) -> dict:
    pins = load_pins()
    return {
        "schema_version": 1,
        "recorded_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "scenario": {"name": scenario.name, "fingerprint": scenario.fingerprint},
        "configuration": configuration,
        "pins": {"sglang_commit": pins.get("SGLANG_COMMIT"), "mooncake_commit": pins.get("MOONCAKE_COMMIT")},
        "bench_image": bench_image,
        "server_containers": containers,
        "host": {
            "hostname": socket.gethostname(),
            "kernel": platform.release(),
            "os": platform.platform(),
            "gpu": nvidia.driver_summary(),
            "nics": host_sysfs.nic_inventory(sysfs),
        },
        "endpoints": endpoints,
        "server_info": {role: server_info(url) for role, url in endpoints.items() if role != "router"},
        "environment": environment(),
        "transport": transport,
        "logs": log_source,
        "versions": versions(),
    }


class ProvenanceRecord:
    """RUN/provenance.json of one sweep. Host and image facts are collected once per
    sweep (they take a few subprocess calls); the per-length outcome is refreshed on every write."""

    def __init__(self, cfg, run: RunDir):
        self.cfg, self.run, self.facts = cfg, run, None

    def write(self, transport_facts, state) -> None:
        cfg = self.cfg
        if self.facts is None:
            self.facts = collect(
                scenario=cfg.scenario, endpoints=cfg.endpoints(), bench_image=cfg.bench_image,
                containers=cfg.log_source.containers() if cfg.log_source is not None else {},
                transport=transport_facts,
                log_source=cfg.log_source.describe() if cfg.log_source is not None else None,
                configuration=cfg.configuration, sysfs=cfg.sysfs,
            )
        facts = dict(self.facts, transport=transport_facts)
        facts["sweep"] = {"lengths": state.file.to_json()["lengths"], "failed": {str(k): v for k, v in state.failed().items()}}
        self.run.write_provenance(Provenance(facts), sort_keys=True)
