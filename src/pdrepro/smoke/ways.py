"""The ways the smoke moves the same bytes (Mooncake, NIXL when asked for, the socket copy), each read from a
summary row through its typed fields (rundir.summarymodel.SmokeRow): the report's table and the plots take a way's
figures from here, never by a key's name, so a figure the model does not declare cannot be read."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..rundir.summarymodel import SmokeRow, SmokeSummary, Stall, Summary, as_summary


@dataclass(frozen=True)
class Figures:
    """One way's figures at one size: times in milliseconds, bandwidth of the median in decimal GB/s."""

    ms_min: float
    ms_median: float
    ms_max: float
    ms_all: tuple[float, ...]
    bandwidth_GB_s: float | None
    verified: bool | None
    stall: Stall | None


@dataclass(frozen=True)
class Way:
    name: str                                  # in the plots' legends
    short: str                                 # in the report's sentences
    color: str
    figures: Callable[[SmokeRow], Figures | None]   # None: this way has no figures at the size


def _figures(lo: float | None, med: float | None, hi: float | None, every: list[float] | None, bw: float | None,
             verified: bool | None, stall: Stall | None) -> Figures | None:
    if lo is None or med is None or hi is None:
        return None
    return Figures(lo, med, hi, tuple(every or ()), bw, verified, stall)


def _mooncake(r: SmokeRow) -> Figures | None:
    return _figures(r.transfer_ms_min, r.transfer_ms_median, r.transfer_ms_max, r.transfer_ms_all,
                    r.bandwidth_GB_s, r.verified, r.mooncake_stall)


def _nixl(r: SmokeRow) -> Figures | None:
    return _figures(r.nixl_ms_min, r.nixl_ms_median, r.nixl_ms_max, r.nixl_ms_all, r.nixl_bandwidth_GB_s,
                    r.nixl_verified, r.nixl_stall)


def _socket(r: SmokeRow) -> Figures | None:
    return _figures(r.socket_ms_min, r.socket_ms_median, r.socket_ms_max, r.socket_ms_all,
                    r.socket_bandwidth_GB_s, r.socket_verified, r.socket_stall)


MOONCAKE = Way("Mooncake", "Mooncake", "#1f77b4", _mooncake)
NIXL = Way("NIXL (UCX over TCP)", "NIXL", "#2ca02c", _nixl)
SOCKET = Way("socket copy", "socket", "#ff7f0e", _socket)
WAYS = (MOONCAKE, SOCKET)


def asked_nixl(summary: Summary) -> bool:
    """Whether the run asked for the NIXL arm: its smoke block names the backends it ran."""
    return "nixl" in ((summary.smoke or {}).get("backends") or [])


def ways_of(summary: Summary) -> tuple[Way, ...]:
    """The ways this run measured: NIXL's only when the run asked for it (absent, not empty, otherwise)."""
    return (MOONCAKE, NIXL, SOCKET) if asked_nixl(summary) else WAYS


def all_verified(r: SmokeRow) -> bool:
    """Every way's transfers at this size delivered the right bytes (NIXL's counts only where it ran)."""
    return bool(r.verified and r.socket_verified and r.nixl_verified is not False)


def as_smoke(data: Summary | Mapping[str, Any]) -> SmokeSummary:
    """``data`` as a smoke's summary model; a summary of another kind has none of the smoke's ways."""
    summary = as_summary(data)
    if not isinstance(summary, SmokeSummary):
        raise ValueError("not a smoke's summary: its rows hold none of the smoke's ways")
    return summary
