"""RUN/baseline.json as a model: what the fabric moved without SGLang (`pdrepro baseline --out RUN`).

fabric.baseline measures and fills it; the analysis reads the measured ceiling from it. Both go
through RunDir.read_baseline / write_baseline.
"""

from __future__ import annotations

import math
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from ..core.errors import UserError


def _number_or_none(value: Any) -> Any:
    # A ceiling that is not a number was never measured (the tools failed): no ceiling, not an error.
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


class BaselineFile(BaseModel):
    """Fields in the order `pdrepro baseline` writes them; a tool that did not run leaves its key out."""

    model_config = ConfigDict(extra="allow")

    schema_version: int = 1
    peer: str | None = None
    created: str | None = Field(default=None, description="UTC, ISO 8601")
    nics: list[str] = Field(default_factory=list)
    line_rate_GB_s: Annotated[float | None, BeforeValidator(_number_or_none)] = Field(
        default=None, description="the local NICs' line rate, decimal GB/s")
    ib_write_bw: dict[str, Any] | None = None
    transfer_engine_bench: dict[str, Any] | None = None
    baseline_GB_s: Annotated[float | None, BeforeValidator(_number_or_none)] = Field(
        default=None, description="the measured ceiling, decimal GB/s")
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
            raise UserError(f"{path}: baseline_GB_s is {problem}; not a measured ceiling: re-run `pdrepro baseline --out "
                            f"{run_root}` or delete the file")
        return float(value)


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
