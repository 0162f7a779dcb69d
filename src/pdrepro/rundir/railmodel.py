"""One RDMA port's figures over one length, as the per-rail witness (analysis/rails.py) writes them into
summary.json's rows; the verdicts and the report read them only as this model."""

from __future__ import annotations

from pydantic import Field

from .summarybase import _Open


class NicRail(_Open):
    """A port of a node: the bytes it moved in the KV's direction, and, for a rail, its share and rate."""

    role: str = Field(description="the node's role (prefill: transmit counted, decode: receive counted)")
    port: str = Field(description="<device>/<port> as sysfs names it; <device>/? for a named device not read")
    counter: str | None = Field(default=None, description="the port counter read (port_xmit_data, port_rcv_data)")
    bytes: int | None = Field(default=None, description="bytes the port moved in the KV's direction")
    judged: bool = Field(default=False, description="whether ib_devices.json names the port for the GPUs in use")
    share_of_mean: float | None = Field(
        default=None, description="the port's bytes over the mean per rail of its node (an even split is 1.0)")
    rate_GB_s: float | None = Field(default=None, description="bytes over the window between readings, decimal GB/s")
    line_rate_GB_s: float | None = Field(default=None, description="the port's own line rate from sysfs, decimal GB/s")
    note: str | None = Field(default=None, description="why the port is not judged or has no figure, if so")

    @property
    def name(self) -> str:
        """How checks and the report name the rail: the node's role and the port."""
        return f"{self.role} {self.port}"
