"""The interface every serving-engine module fills in."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol


class ServingEngine(Protocol):
    name: str                      # the scenario's launch.engine and the registry's key
    label: str                     # for people: "SGLang"
    # The transfer backends it can run, each with the value its server flag takes.
    backend_flags: Mapping[str, str]
    server_module: str
    router_module: str
    bench_module: str
    # Paths a worker / the router answer when healthy, tried in order; the server's own arguments.
    worker_health_paths: tuple[str, ...]
    router_health_paths: tuple[str, ...]
    info_path: str
    # The variable that tells a server the address it advertises to its peers.
    host_ip_env: str
    # Environment variables of its own a scenario may set (by prefix) and provenance records.
    env_prefixes: tuple[str, ...]
    modules: tuple[str, ...]
    distributions: tuple[str, ...]
