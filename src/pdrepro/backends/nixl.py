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
    # UCX reads hundreds of UCX_* variables: the prefix stands for them, no list is kept.
    knob_file: str | None = None
    plan_env: Mapping[str, str] = field(default_factory=dict)
    modules: tuple[str, ...] = ("nixl",)
    distributions: tuple[str, ...] = DISTRIBUTIONS
    timing: str = TIMING
    # UCX may use RDMA, TCP or (on one box) CUDA IPC: the lanes it logged decide, not the backend.
    tcp_only: bool = False
    # No pinned commit in provenance's pins yet (the image pins NIXL by version).
    pin_keys: Mapping[str, str] = field(default_factory=dict)
    # What-ran: no image build arg, wheel label or import probe recorded for it yet.
    # How to get RDMA from it where the proof found none (the sweep's refusal ends with it).
    # UCX_TLS named, not unset: unset, UCX logs only its loopback endpoint (self/memory) until the first
    # transfer, which proves nothing at the sweep's start, and joins servers of one node over CUDA IPC.
    rdma_hint: str = ("name UCX's RDMA transport (UCX_TLS=rc,cuda_copy, or dc) and set UCX_LOG_LEVEL=info so the "
                      "servers' logs name the transports UCX used")
    image_build_key: str | None = None
    wheel_label: str | None = None
    import_probe_key: str | None = None

    def found_devices(self, reading: nixl_log.NixlTransport) -> set[str] | None:
        """The RDMA devices UCX's lanes ran on; None when no RDMA lane was logged (UCX never says "none")."""
        found = {d for t, devices in reading.transports.items() if t in nixl_log.RDMA_TRANSPORTS for d in devices}
        return found or None

    def scan(self, role: str, text: str, env: Mapping[str, str] | None = None) -> nixl_log.NixlTransport:
        return _with_env(nixl_log.scan(role, text), env)

    def scan_latest_start(self, role: str, lines: Iterable[str],
                          env: Mapping[str, str] | None = None) -> nixl_log.NixlTransport:
        return _with_env(nixl_log.scan_latest_start(role, lines), env)


BACKEND = Nixl()
