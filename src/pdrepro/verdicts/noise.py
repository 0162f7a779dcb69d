"""The one rule by which a figure made of repeats is called better or worse than another: only when their
confidence intervals (analysis.interval) do not overlap. Overlapping intervals are within the noise, however
far apart the two figures themselves are; a figure without an interval is not judged.

Every command that ranks configurations (the tune, the A/B) asks this module, so "better" means one thing in
every report.
"""

from __future__ import annotations

from ..rundir.noisemodel import Interval, Standing

RULE = ("better only when the two confidence intervals do not overlap, the figure's whole interval on the better "
        "side of the other's; worse the same way on the other side; overlapping intervals are within the noise")


def standing(figure: Interval | None, against: Interval | None, higher_is_better: bool) -> Standing:
    """``figure`` against ``against``: higher_is_better for a bandwidth, lower for a time."""
    if figure is None or against is None:
        return "not judged"
    if figure.overlaps(against):
        return "within the noise"
    above = figure.low > against.high
    return "better" if above == higher_is_better else "worse"
