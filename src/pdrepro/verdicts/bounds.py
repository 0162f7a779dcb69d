"""Which bounds a scenario judging a run sets otherwise than the run's own scenario.

A run may be judged against another scenario or a thresholds file when asked;
the verdict then rests on other bounds, and whoever reads it must see which:
each bound loosened (lets more pass), tightened, added or removed, and a
length the judging scenario leaves out.
"""

from __future__ import annotations

from ..scenario.model import Scenario
from ..scenario.sections import Thresholds

# Bounds where a higher figure passes (a lower bound loosens them); the rest are ceilings.
_FLOORS = {"min_bandwidth_GB_s", "min_peak_bandwidth_GB_s", "min_peak_utilization_pct", "min_completed_fraction",
           "min_nic_kv_share_pct", "min_rail_share", "min_port_baseline_fraction"}


def _flat(t: Thresholds) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for key, value in t.model_dump(exclude={"derivation"}).items():  # the rules behind the bounds are no bounds
        if isinstance(value, dict):
            out.update({f"{key}[{L}]": v for L, v in value.items()})
        else:
            out[key] = value
    return out


def _verdict(key: str, own: float, used: float) -> str:
    floor = key.split("[")[0] in _FLOORS
    return "loosened" if (used < own) == floor else "tightened"


def bound_changes(own: Scenario, used: Scenario) -> list[str]:
    """One line per bound ``used`` sets otherwise than ``own`` (empty when they judge alike)."""
    lines = []
    mine, theirs = _flat(own.thresholds), _flat(used.thresholds)
    for key in list(mine) + [k for k in theirs if k not in mine]:
        a, b = mine.get(key), theirs.get(key)
        if a == b:
            continue
        if b is None:
            lines.append(f"{key}: removed (the run's scenario sets {a:g})")
        elif a is None:
            lines.append(f"{key}: added, {b:g} (the run's scenario sets none)")
        else:
            lines.append(f"{key}: {_verdict(key, a, b)}, {b:g} instead of the run's {a:g}")
    if own.line_rate_GB_s != used.line_rate_GB_s:
        a, b = own.line_rate_GB_s, used.line_rate_GB_s
        how = "removed" if b is None else "loosened" if a is None or b > a else "tightened"
        lines.append(f"line rate (bandwidth ceiling, GB/s): {how}, {b} instead of the run's {a}")
    for L in own.sweep.prompt_lens:
        if L not in used.sweep.prompt_lens:
            lines.append(f"length {L}: removed (the run's scenario sweeps it; it is not judged)")
    return lines
