"""The interface every transfer backend module fills in."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from ..core.seampart import SeamPart


class TransportReading(Protocol):
    """What one server's start-up lines say of the transport its backend installed."""

    role: str
    lines_read: int
    evidence: list[str]

    @property
    def verdict(self) -> str:
        """rdma, tcp, rdma-broken (RDMA tried and failed), intra-host (no network carried the KV: UCX over
        CUDA IPC or shared memory on one box) or unknown (no start-up lines)."""

    def describe(self) -> str: ...

    def to_dict(self) -> dict: ...


class TransferBackend(SeamPart, Protocol):
    # Read-only members: the modules are frozen dataclasses. Name, label, environment prefixes, modules,
    # distributions and pin keys: see SeamPart.
    # Variables the disaggregated stack must set for it (the published launch's own).
    @property
    def required_env(self) -> tuple[str, ...]: ...
    # What the launch plan sets for it, not the scenario (MC_FORCE_TCP=1 for Mooncake over TCP).
    @property
    def plan_env(self) -> Mapping[str, str]: ...
    # What-ran: the image's build arg naming the commit it built, the versions record's wheel label and import
    # probe key (None where the image and the versions record keep none for it).
    @property
    def image_build_key(self) -> str | None: ...
    # How to get RDMA from this backend where the proof found none.
    @property
    def rdma_hint(self) -> str: ...
    @property
    def wheel_label(self) -> str | None: ...
    @property
    def import_probe_key(self) -> str | None: ...
    # What the engine's logged per-request transfer time measures with this backend: never compared across
    # backends, since each measures its own window.
    @property
    def timing(self) -> str: ...
    # Whether this backend can only move KV over TCP (then the NIC witness does not apply).
    @property
    def tcp_only(self) -> bool: ...

    def found_devices(self, reading: Any) -> set[str] | None:
        """The RDMA devices a reading of this backend's ``scan`` says its server found: a set (empty when the log
        says none), or None when the log says neither."""

    def scan(self, role: str, text: str, env: Mapping[str, str] | None = None) -> TransportReading:
        """The transport from one server log's text; ``env`` is the server's environment where known."""

    def scan_latest_start(self, role: str, lines: Iterable[str],
                          env: Mapping[str, str] | None = None) -> TransportReading:
        """``scan`` over the lines of the server's latest start only, read as a stream (logs can be huge)."""
