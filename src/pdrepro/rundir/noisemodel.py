"""How sure a figure made of repeats is, as the summaries of a tune and an A/B carry it: its confidence
interval (analysis.interval draws it) and the noise floor its configuration showed between repeats.

Both state how they were made in words (``method``, ``of``), so a reader of the JSON or the report never has
to know this code to read them: the level, the resampling, the seed, the runs and requests behind them.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .summarybase import _Closed

# A figure against another by verdicts.noise's rule.
Standing = Literal["better", "worse", "within the noise", "not judged"]


class Interval(_Closed):
    """A figure's confidence interval. ``low`` <= ``point`` <= ``high`` holds whenever it was made here."""

    point: float = Field(description="the figure itself, as the summary gives it, in its own unit")
    low: float = Field(description="the interval's lower end, same unit")
    high: float = Field(description="the interval's upper end, same unit")
    level: float = Field(gt=0, lt=1, description="its confidence level, e.g. 0.95")
    runs: int = Field(ge=1, description="the runs it was drawn from")
    requests: int = Field(ge=1, description="the requests (or, for a run without per-request figures, the runs' "
                                            "own figures) it was drawn from, all runs together")
    method: str = Field(description="how it was drawn, in words: level, bootstrap, resamples, seed, what was "
                                    "resampled, any noise borrowed from another configuration's repeats")

    def overlaps(self, other: Interval) -> bool:
        return self.low <= other.high and other.low <= self.high


class NoiseFloor(_Closed):
    """The spread between repeats of one configuration, the least difference two figures of it can show by
    chance alone on this box."""

    of: str = Field(description="the configuration repeated, in words (e.g. the tune's baseline)")
    runs: list[float] = Field(min_length=2, description="each repeat's figure, in run order")
    unit: str = Field(description="the figures' unit, e.g. GB/s or ms")
    spread: float = Field(ge=0, description="the highest repeat less the lowest, in the unit")
    spread_pct: float | None = Field(default=None, description="the spread over the repeats' mean, percent; null "
                                                               "when the mean is 0")
