"""Mooncake Transfer Engine: RDMA when it finds an accessible HCA (TCP when it finds none)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ..parsers import mooncake_log

ENGINE_DISTRIBUTIONS = ("mooncake-transfer-engine", "mooncake-transfer-engine-cuda13",
                        "mooncake-transfer-engine-non-cuda")
_NO_DEVICES = "No RDMA devices found"
TIMING = ("from the request entering the prefill's transfer queue to the scheduler seeing completion "
          "(the engine logs no latency of its own; the last chunk's time)")


def _force_tcp(env: Mapping[str, str] | None) -> bool:
    return (env or {}).get("MC_FORCE_TCP") == "1"


@dataclass(frozen=True)
class Mooncake:
    name: str = "mooncake"
    label: str = "Mooncake"
    env_prefixes: tuple[str, ...] = ("MC_", "MOONCAKE_")
    required_env: tuple[str, ...] = ("MOONCAKE_PROTOCOL", "WITH_NVIDIA_PEERMEM")
    # Every MC_* variable the pinned transfer engine reads, generated from its source (make knobs).
    knob_file: str | None = "mooncake.json"
    plan_env: Mapping[str, str] = field(default_factory=dict)
    modules: tuple[str, ...] = ("mooncake.engine",)
    distributions: tuple[str, ...] = ENGINE_DISTRIBUTIONS
    timing: str = TIMING
    tcp_only: bool = False
    # provenance.json's pins field -> the versions.env key holding the pinned commit.
    pin_keys: Mapping[str, str] = field(default_factory=lambda: {"mooncake_commit": "MOONCAKE_COMMIT"})
    # What-ran: the image's build arg naming the commit it built, the versions record's wheel label and its
    # import probe (image/versions.py writes both).
    # How to get RDMA from it where the proof found none (the sweep's refusal ends with it).
    rdma_hint: str = "unset MC_FORCE_TCP, set MC_GID_INDEX if no suitable GID is found"
    image_build_key: str | None = "pdrepro_image_mooncake_commit"
    wheel_label: str | None = "mooncake-transfer-engine"
    import_probe_key: str | None = "mooncake_engine"

    def found_devices(self, reading: mooncake_log.ServerTransport) -> set[str] | None:
        """The RDMA devices the engine found: a set (empty when it found none), None when its log says neither."""
        if reading.devices or (reading.hca_counts and max(reading.hca_counts) > 0):
            return set(reading.devices) or {f"{max(reading.hca_counts)} HCA(s)"}
        if (reading.hca_counts and max(reading.hca_counts) == 0) or any(_NO_DEVICES in line for line in reading.evidence):
            return set()
        return None

    def scan(self, role: str, text: str, env: Mapping[str, str] | None = None) -> mooncake_log.ServerTransport:
        return mooncake_log.scan(role, text, force_tcp_set=_force_tcp({**self.plan_env, **(env or {})}))

    def scan_latest_start(self, role: str, lines: Iterable[str],
                          env: Mapping[str, str] | None = None) -> mooncake_log.ServerTransport:
        return mooncake_log.scan_latest_start(role, lines, force_tcp_set=_force_tcp({**self.plan_env, **(env or {})}))


BACKEND = Mooncake()
