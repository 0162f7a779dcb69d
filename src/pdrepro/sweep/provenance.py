"""What ran, where: recorded in RUN/provenance.json next to the results."""

from __future__ import annotations

import copy
import json
import os
import platform
import socket
import threading
import time
from collections.abc import Mapping
from pathlib import Path

import requests

from .. import backends, engines
from ..core import runfile
from ..core.pins import load_pins
from ..host import nvidia
from ..host import sysfs as host_sysfs
from ..host.tools import ToolFailed, ToolMissing, capture
from ..image.versions import collect_versions
from ..rundir import Provenance, RunDir
from ..scenario.seams import backend_of, engine_of
from . import knobrecord, railmap

# Read by the collective library under every engine and backend; each engine and backend adds its own.
SHARED_ENV_PREFIXES = ("NCCL_",)


def env_prefixes(scenario) -> tuple[str, ...]:
    """The variables provenance records: the scenario's engine's, its backend's and the shared ones."""
    return (*engine_of(scenario).env_prefixes, *backend_of(scenario).env_prefixes, *SHARED_ENV_PREFIXES)


def every_env_prefix() -> tuple[str, ...]:
    """Every registered engine's and backend's variables and the shared ones: what a server container's
    environment is recorded by, whichever the run used (its own configuration shows which it read)."""
    own = [p for n in engines.names() for p in engines.engine(n).env_prefixes]
    own += [p for n in backends.names() for p in backends.backend(n).env_prefixes]
    return tuple(dict.fromkeys([*own, *SHARED_ENV_PREFIXES]))


def environment(prefixes: tuple[str, ...], env: Mapping[str, str] | None = None) -> dict[str, str]:
    source = os.environ if env is None else env
    return {k: v for k, v in sorted(source.items()) if k.startswith(prefixes)}


def pins(scenario) -> dict[str, str | None]:
    """The pinned commits of the scenario's engine and backend, under provenance's pins keys."""
    pinned = load_pins()
    keys = {**engine_of(scenario).pin_keys, **backend_of(scenario).pin_keys}
    return {field: pinned.get(key) for field, key in keys.items()}


def server_info(url: str, path: str) -> dict | None:
    try:
        resp = requests.get(url.rstrip("/") + path, timeout=10)
        return resp.json() if resp.ok else {"error": f"HTTP {resp.status_code}"}
    except (requests.RequestException, ValueError) as exc:
        return {"error": type(exc).__name__}


def addresses() -> list[str]:
    """This host's own IP addresses, so a server the sweep reaches at one of them is known to run here
    (and shares this host's RDMA devices, or their absence). Where no tool answers: the name's addresses."""
    found: set[str] = set()
    try:
        out = capture(["ip", "-j", "addr", "show"], timeout=10).stdout
        for link in json.loads(out or "[]"):
            found.update(a["local"] for a in link.get("addr_info", []) if a.get("local"))
    except (OSError, ToolMissing, ToolFailed, ValueError, TypeError, KeyError, AttributeError):
        pass
    try:
        found.update(str(info[4][0]) for info in socket.getaddrinfo(socket.gethostname(), None))
    except OSError:
        pass
    return sorted(found)


def boot_id(proc: Path = Path("/proc")) -> str | None:
    """This boot of this host: where `pdrepro stack up` ran the servers on the same boot (its stack.json holds
    the same id), the analysis may take this host's RDMA devices as theirs."""
    try:
        return runfile.read_host(proc / "sys/kernel/random/boot_id", runfile.PROC).strip() or None
    except OSError:
        return None


def servers_info(endpoints: dict[str, str], path: str) -> dict:
    return {role: server_info(url, path) for role, url in endpoints.items() if role != "router"}


def versions() -> dict:
    try:
        return collect_versions()
    except Exception as exc:  # a report of versions must not sink the run
        return {"error": f"{type(exc).__name__}: {exc}"}


def collect(*, scenario, endpoints: dict[str, str], bench_image: dict | None, containers: dict,
            transport: dict | None, log_source: dict | None, configuration: str | None,
            sysfs: Path, servers: bool = True, run_root: Path | None = None) -> dict:
    return {
        "schema_version": 1,
        "recorded_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "scenario": {"name": scenario.name, "fingerprint": scenario.fingerprint},
        "configuration": configuration,
        "pins": pins(scenario),
        "bench_image": bench_image,
        "server_containers": containers,
        "host": {
            "hostname": socket.gethostname(),
            "kernel": platform.release(),
            "os": platform.platform(),
            "gpu": nvidia.driver_summary(),
            "nics": host_sysfs.nic_inventory(sysfs),
            "addresses": addresses(),
            "boot_id": boot_id(),
        },
        "endpoints": endpoints,
        "server_info": servers_info(endpoints, engine_of(scenario).info_path) if servers else None,
        "environment": environment(env_prefixes(scenario)),
        # The settings the scenario gave the servers and, where stack up started them here, what each got.
        "knobs": knobrecord.collect(scenario, run_root),
        "transport": transport,
        "logs": log_source,
        "versions": versions(),
    }


class ProvenanceRecord:
    """RUN/provenance.json of one sweep. Host and image facts are collected once per
    sweep; the per-length outcome is refreshed on every write.

    Collecting them costs seconds on a GPU host (torch imported with its CUDA, a Python
    importing the Mooncake engine, nvidia-smi, nvcc): on the recorded H200 run most of the
    sweep's 4 % outside the bench client. ``prefetch`` therefore collects them on a thread
    while the sweep waits for the stack and runs its first length, and ``write_soon`` writes
    the file as soon as they are in; every later ``write`` waits for them first, so the
    writes keep their order and the record is complete before the sweep ends."""

    def __init__(self, cfg, run: RunDir):
        self.cfg, self.run = cfg, run
        self.facts: dict | None = None
        self._pending: threading.Thread | None = None
        self._failure: BaseException | None = None
        self._soon: tuple | None = None
        self._lock = threading.Lock()  # orders "facts are in" against "write when they are"
        self.server_info: dict | None = None

    def _collect(self, servers: bool = True) -> dict:
        cfg = self.cfg
        return collect(
            scenario=cfg.scenario, endpoints=cfg.endpoints(), bench_image=cfg.bench_image,
            containers=cfg.log_source.containers() if cfg.log_source is not None else {},
            transport=None,
            log_source=cfg.log_source.describe() if cfg.log_source is not None else None,
            configuration=cfg.configuration, sysfs=cfg.sysfs, servers=servers, run_root=self.run.root,
        )

    def prefetch(self) -> None:
        def work():
            try:
                # The servers are asked later, from the sweep's thread, once they are healthy.
                facts = self._collect(servers=False)
                with self._lock:
                    self.facts, soon = facts, self._soon
                if soon is not None:
                    self._write(*soon)
            except BaseException as exc:  # handed to the sweep's thread at the next write
                self._failure = exc
        self._pending = threading.Thread(target=work, name="provenance", daemon=True)
        self._pending.start()

    def _ready(self) -> None:
        if self._pending is not None:
            self._pending.join()
            self._pending = None
        if self._failure is not None:
            failure, self._failure = self._failure, None
            raise failure
        if self.facts is None:
            self.facts = self._collect()

    def _write(self, transport_facts, lengths: dict, failed: dict) -> None:
        assert self.facts is not None  # both callers write once the facts are in (_ready, or the prefetch itself)
        facts = dict(self.facts, transport=transport_facts)
        if facts.get("server_info") is None:
            facts["server_info"] = self.server_info
        facts["sweep"] = {"lengths": lengths, "failed": {str(k): v for k, v in failed.items()}}
        self.run.write_provenance(Provenance(facts), sort_keys=True)

    def write_soon(self, transport_facts, state) -> None:
        """Writes the record now if its facts are in, else as soon as the prefetch has them
        (with the sweep's state as it stands now)."""
        self._ask_servers()
        snapshot = (transport_facts, copy.deepcopy(state.file.to_json()["lengths"]), dict(state.failed()))
        with self._lock:
            if self._pending is not None and self.facts is None:
                self._soon = snapshot  # the prefetch writes it (a failed one: the next write raises)
                return
        self._ready()
        self._write(*snapshot)

    def settle(self) -> None:
        """Waits for the prefetch (and the write it owes) without raising its failure."""
        if self._pending is not None:
            self._pending.join()

    def _ask_servers(self) -> None:
        if self.server_info is None:
            self.server_info = servers_info(self.cfg.endpoints(), engine_of(self.cfg.scenario).info_path)
            # The GPU-to-NIC map the servers say they were started with, for the per-rail witness.
            railmap.record_servers_map(self.run, self.cfg.scenario, self.server_info, self.cfg.ib_devices)

    def write(self, transport_facts, state) -> None:
        self._ask_servers()
        self._ready()
        self._write(transport_facts, state.file.to_json()["lengths"], state.failed())
