"""NIXL over UCX: UCX picks its transports (names them at a raised log level); UCX_TLS restricts them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ..parsers import nixl_log

# NIXL's backend sets each request's transfer latency itself; the engine then logs that window.
TIMING = "from NIXL's first send of the request's KV to NIXL reporting it done (NIXL's own latency)"
# The PyPI wheels: one backend per CUDA major (the code) and a meta package that imports it as `nixl`;
# provenance names the first found, so the wheel that carries the code comes first.
DISTRIBUTIONS = ("nixl-cu13", "nixl-cu12", "nixl")


def _with_env(st: nixl_log.NixlTransport, env: Mapping[str, str] | None) -> nixl_log.NixlTransport:
    # UCX logs the UCX_* variables it read only at info level: the server's recorded environment says it
    # otherwise. What UCX said wins.
    if st.ucx_tls is None and env and env.get("UCX_TLS"):
        st.ucx_tls = env["UCX_TLS"]
    return st


@dataclass(frozen=True)
class Nixl:
    name: str = "nixl"
    label: str = "NIXL (UCX)"
    env_prefixes: tuple[str, ...] = ("UCX_", "NIXL_")
    required_env: tuple[str, ...] = ()
    plan_env: Mapping[str, str] = field(default_factory=dict)
    modules: tuple[str, ...] = ("nixl",)
    distributions: tuple[str, ...] = DISTRIBUTIONS
    timing: str = TIMING
    # UCX may use RDMA, TCP or (on one box) CUDA IPC: the lanes it logged decide, not the backend.
    tcp_only: bool = False

    def scan(self, role: str, text: str, env: Mapping[str, str] | None = None) -> nixl_log.NixlTransport:
        return _with_env(nixl_log.scan(role, text), env)

    def scan_latest_start(self, role: str, lines: Iterable[str],
                          env: Mapping[str, str] | None = None) -> nixl_log.NixlTransport:
        return _with_env(nixl_log.scan_latest_start(role, lines), env)


BACKEND = Nixl()
