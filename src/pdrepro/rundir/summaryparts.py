"""The records inside summary.json that no one kind's model owns (summarymodel.Summary and its kinds' models
hold them): a node's NIC counters, what ran, the witness, the /metrics scrapes, the engine ceiling, a
comparison's configurations, a size's stall. Split from summarymodel.py to keep each module to one screenful."""

from __future__ import annotations

from pydantic import Field

from .summarybase import _Open


class NicNode(_Open):
    """What one node's RDMA port counters moved over one length (the NIC witness)."""

    counter: str | None = Field(default=None, description="the port counter read (port_xmit_data, port_rcv_data)")
    bytes: int | None = Field(default=None, description="bytes the counter moved in the KV's direction")
    window_s: float | None = Field(default=None, description="seconds between the two readings")
    source: str | None = Field(default=None, description="where the counters were read")
    problem: str | None = Field(default=None, description="why the node's figure is missing, if it is")
    kv_share_pct: float | None = Field(default=None, description="bytes as a share of the model's KV bytes, percent")
    rate_GB_s: float | None = Field(default=None, description="average rate over the window, decimal GB/s")


class Stall(_Open):
    """A size whose transfers split into a fast and a much slower group (the smoke)."""

    stalled: int = Field(description="transfers in the slow group")
    of: int = Field(description="transfers timed")
    slow_ms_median: float = Field(description="median of the slow group, milliseconds")
    fast_ms_median: float = Field(description="median of the rest, milliseconds")
    extra_ms: float = Field(description="what the slow group took more, milliseconds")
    likely_cause: str = Field(description="what such a split usually means")


class WhatRan(_Open):
    """One component: what ran, its pin and whether they match (None: not known)."""

    item: str
    ran: str | None = None
    pinned: str | None = None
    match: bool | None = None
    source: str = ""


class Witness(_Open):
    """How the NIC counters were held against the KV: the floor and the allowance above the KV."""

    min_kv_share_pct: float | None = None
    min_rail_share: float | None = None
    header_fraction: float | None = None
    control_bytes_per_request: int | None = None


class Metric(_Open):
    """One /metrics scrape's transfer figures (averages since the server started)."""

    file: str
    transfers: int
    latency_ms_mean: float | None = None
    total_MiB_mean: float | None = None
    speed_GiB_s_mean: float | None = None
    bandwidth_GB_s: float | None = None


class CeilingRow(_Open):
    """One length against the Mooncake engine alone on the same box (decimal GB/s)."""

    bandwidth_GB_s: float | None = None
    engine_GB_s: float | None = None
    engine_shape: str = ""
    ratio: float | None = None
    contradiction: bool = Field(default=False, description="per request above 1.2x the engine alone: not of one box")


class CeilingSource(_Open):
    file: str = "engine-ceiling"
    transport: str | None = None


class Measured(_Open):
    """A comparison configuration's measured figures."""

    prompt_len: int | None = None
    completed: int
    errors: int


class Configuration(_Open):
    measured: Measured | None = None
    published: dict[str, float] = Field(default_factory=dict)
