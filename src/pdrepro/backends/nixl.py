"""NIXL over UCX: UCX picks its transports (names them at a raised log level); UCX_TLS restricts them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ..parsers import nixl_log

TIMING = "from NIXL's first send of the request's KV to its success (NIXL's own latency)"


@dataclass(frozen=True)
class Nixl:
    name: str = "nixl"
    label: str = "NIXL (UCX)"
    env_prefixes: tuple[str, ...] = ("UCX_", "NIXL_")
    required_env: tuple[str, ...] = ()
    plan_env: Mapping[str, str] = field(default_factory=dict)
    modules: tuple[str, ...] = ("nixl",)
    distributions: tuple[str, ...] = ("nixl", "nixl-cu13", "nixl-cu12")
    timing: str = TIMING
    tcp_only: bool = False
    # No pinned commit in provenance's pins yet (the image pins NIXL by version).
    pin_keys: Mapping[str, str] = field(default_factory=dict)
    # What-ran: no image build arg, wheel label or import probe recorded for it yet.
    # How to get RDMA from it where the proof found none (the sweep's refusal ends with it).
    rdma_hint: str = ("let UCX pick an RDMA transport (UCX_TLS unset, or naming rc/dc), and set UCX_LOG_LEVEL=info "
                      "so the servers' logs name the transports UCX used")
    image_build_key: str | None = None
    wheel_label: str | None = None
    import_probe_key: str | None = None

    def found_devices(self, reading: nixl_log.NixlTransport) -> set[str] | None:
        """The RDMA devices UCX's lanes ran on; None when no RDMA lane was logged (UCX never says "none")."""
        found = {d for t, devices in reading.transports.items() if t in nixl_log.RDMA_TRANSPORTS for d in devices}
        return found or None

    def scan(self, role: str, text: str, env: Mapping[str, str] | None = None) -> nixl_log.NixlTransport:
        return nixl_log.scan(role, text)

    def scan_latest_start(self, role: str, lines: Iterable[str],
                          env: Mapping[str, str] | None = None) -> nixl_log.NixlTransport:
        return nixl_log.scan_latest_start(role, lines)


BACKEND = Nixl()
