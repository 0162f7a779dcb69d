"""RUN/baseline.json as a model: what the fabric moved without SGLang (`pdrepro baseline --out RUN`).

fabric.baseline measures and fills it; the analysis reads the measured ceiling and each port's figures
from it. Both go through RunDir.read_baseline / write_baseline.
"""

from __future__ import annotations

import math
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from ..core import advice
from ..core.errors import UserError
from .portbaseline import BaselinePort


def _number_or_none(value: Any) -> Any:
    # A figure that is not a number was never measured (the tools failed): no figure, not an error.
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


Figure = Annotated[float | None, BeforeValidator(_number_or_none)]


class PortRun(BaseModel):
    """One ib_write_bw run over one NIC pair, alone or with every pair at once: its figures, or why none."""

    model_config = ConfigDict(extra="allow")

    bw_average_GB_s: Figure = Field(default=None, description="perftest's BW average, decimal GB/s")
    bw_peak_GB_s: Figure = Field(default=None, description="perftest's BW peak, decimal GB/s")
    bw_average_Gb_s: Figure = Field(default=None, description="the BW average as printed with --report_gbits, Gb/s")
    printed_unit: str | None = Field(default=None, description="the unit perftest printed (Gb/sec or MB/sec)")
    msg_bytes: int | None = None
    qps: int | None = None
    command: list[str] = Field(default_factory=list)
    output: str | None = Field(default=None, description="the tool's output, a file under RUN/baseline/")
    error: str | None = Field(default=None, description="why the run gave no figure (then bw_average_GB_s is null)")


class PortPair(BaseModel):
    """One local port and the peer's port it was paired with, measured alone and with all pairs at once."""

    model_config = ConfigDict(extra="allow")

    local: str
    remote: str
    line_rate_GB_s: Figure = Field(default=None, description="the local port's line rate from sysfs, decimal GB/s")
    alone: PortRun | None = Field(default=None, description="ib_write_bw on this pair only, the others idle")
    together: PortRun | None = Field(default=None, description="ib_write_bw on this pair while every pair runs")


class PerftestRecord(BaseModel):
    """ib_write_bw's part of the record (older records held one run's 'pairs' and 'mode': kept, not read)."""

    model_config = ConfigDict(extra="allow")

    unit: str | None = None
    ports: list[PortPair] = Field(default_factory=list)
    aggregate_GB_s: Figure = Field(
        default=None, description="the sum over the ports measured all at once, decimal GB/s (null when one gave "
                                  "no figure)")


class BaselineFile(BaseModel):
    """Fields in the order `pdrepro baseline` writes them; a tool that did not run leaves its key out."""

    model_config = ConfigDict(extra="allow")

    schema_version: int = 1
    peer: str | None = None
    created: str | None = Field(default=None, description="UTC, ISO 8601")
    nics: list[str] = Field(default_factory=list)
    line_rate_GB_s: Figure = Field(default=None, description="the local NICs' line rate, decimal GB/s")
    ib_write_bw: PerftestRecord | None = None
    transfer_engine_bench: dict[str, Any] | None = None
    baseline_GB_s: Figure = Field(default=None, description="the measured ceiling, decimal GB/s")
    baseline_source: str | None = Field(default=None, description="the tool that measured it")
    refused: str | None = Field(default=None, description="why the measured figure is no ceiling (then baseline_GB_s is null)")

    def to_json(self) -> dict:
        return self.model_dump(exclude_unset=True)

    def ceiling(self, path, run_root, line_rate_GB_s: float | None = None) -> float | None:
        """The measured ceiling (decimal GB/s), None when none was measured; refused where it is zero or above
        the line rate (the NICs' this record names, else ``line_rate_GB_s``, the scenario's)."""
        value = self.baseline_GB_s
        if value is None:
            return None
        recorded = self.line_rate_GB_s if self.line_rate_GB_s and self.line_rate_GB_s > 0 else line_rate_GB_s
        problem = ceiling_problem(float(value), recorded)
        if problem is not None:
            raise UserError(f"{path}: baseline_GB_s is {problem}; not a measured ceiling: re-run "
                            f"`{advice.baseline(run_root)}` (its server side first, on {advice.PEER}) or delete the file")
        return float(value)

    def ports(self) -> list[BaselinePort]:
        """Each port's figures as the verdicts judge them (empty when ib_write_bw did not run per port)."""
        out = []
        for p in (self.ib_write_bw.ports if self.ib_write_bw is not None else []):
            out.append(BaselinePort(
                port=p.local, remote=p.remote, line_rate_GB_s=p.line_rate_GB_s,
                alone_GB_s=None if p.alone is None else p.alone.bw_average_GB_s,
                together_GB_s=None if p.together is None else p.together.bw_average_GB_s,
                alone_note=_why_none(p.alone), together_note=_why_none(p.together)))
        return out


def _why_none(run: PortRun | None) -> str | None:
    if run is None:
        return "not run"
    if run.bw_average_GB_s is None:
        return run.error or "no figure recorded"
    return None


def ceiling_problem(value: float | None, line_rate_GB_s: float | None) -> str | None:
    """Why ``value`` (decimal GB/s) is no fabric ceiling, or None: zero moved nothing, and no fabric
    moves more than its NICs' line rate."""
    if value is None:
        return None
    if not math.isfinite(value) or value <= 0:
        return f"{value} GB/s, which is no measurement (nothing moved)"
    if line_rate_GB_s and value > line_rate_GB_s:
        return (f"{value:.2f} GB/s, above the {line_rate_GB_s:.1f} GB/s line rate of the NICs it used, which no fabric "
                "exceeds (a unit misread, or traffic over other NICs)")
    return None
