"""Why each threshold has its value: ``thresholds.derivation`` in a scenario, as data.

A reproduction's pass mark is a rule applied to the published figures ("at least 80 % of the published bandwidth
at each length"). Kept as data beside the numbers, ``pdrepro scenarios show`` prints it (a YAML comment would be
stripped), and a rule that names a factor and a published figure is held to the numbers at load: a threshold edited
without its rule, or a rule without its threshold, is refused with one line."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from ..core.errors import UserError
from ..core.strictmodel import FiniteNumber, Record

# The sections (sections.Thresholds, sections.Reference) import this module for ThresholdRule, so the check below
# takes them untyped (Any) rather than import them back: the scenario package has no import cycle.

# The published figures a threshold may be a multiple of: per length (a reference row's column) or the headline.
PER_LENGTH = ("bandwidth_GB_s", "ttft_ms")
HEADLINE = ("peak_bandwidth_GB_s", "peak_utilization_pct")
PublishedFigure = Literal["bandwidth_GB_s", "ttft_ms", "peak_bandwidth_GB_s", "peak_utilization_pct"]
# The thresholds are written to one decimal: a value within half a unit of that decimal (plus float noise) holds.
ROUNDING = 0.05 + 1e-9


class ThresholdRule(Record):
    """The rule behind one threshold: in words, and where it is a multiple of a published figure, that multiple."""

    rule: str = Field(min_length=1, description="the rule in words, as `pdrepro scenarios show` prints it")
    factor: FiniteNumber | None = Field(
        default=None, description="the threshold is this multiple of the published figure `of` (0.8: 80 %)")
    of: PublishedFigure | None = Field(
        default=None, description="the published figure the factor multiplies: a reference row's bandwidth_GB_s or "
                                  "ttft_ms at each length, or the headline's peak_bandwidth_GB_s or "
                                  "peak_utilization_pct")


def check(thresholds: Any, reference: Any, source: str) -> None:
    """Refuse a derivation naming no threshold, or one whose factor does not give the threshold's value."""
    names = set(type(thresholds).model_fields) - {"derivation"}
    for key, rule in thresholds.derivation.items():
        where = f"{source}: thresholds.derivation.{key}"
        if key not in names:
            raise UserError(f"{where} names no threshold; use one of {', '.join(sorted(names))}")
        if (rule.factor is None) != (rule.of is None):
            raise UserError(f"{where}: give factor and of together (the threshold is factor x the published `of`), "
                            "or neither for a rule in words only")
        if rule.factor is None or rule.of is None:
            continue
        if reference is None:
            raise UserError(f"{where}: a factor of the published {rule.of} needs the scenario's reference section")
        for label, value, published in _pairs(getattr(thresholds, key), rule.of, reference, where):
            if abs(value - rule.factor * published) > ROUNDING:
                raise UserError(f"{where}: {key}{label} is {value:g}, but {rule.factor:g} x the published "
                                f"{rule.of} {published:g} is {rule.factor * published:.2f}; fix the threshold or "
                                "the rule")


def _pairs(value: Any, of: str, reference: Any, where: str) -> list[tuple[str, float, float]]:
    """(which, threshold value, published figure) for each value the rule covers."""
    if of in PER_LENGTH:
        if not isinstance(value, dict) or not value:
            raise UserError(f"{where}: a per-length rule ({of}) needs the threshold's per-length values")
        rows = {r.prompt_len: getattr(r, of) for r in reference.rows}
        missing = sorted(set(value) - set(rows))
        if missing:
            raise UserError(f"{where}: the reference has no published {of} at length {missing[0]}")
        return [(f"[{length}]", float(v), float(rows[length])) for length, v in sorted(value.items())]
    if not isinstance(value, (int, float)):
        raise UserError(f"{where}: the threshold is unset, so the rule has nothing to hold")
    if of not in reference.headline:
        raise UserError(f"{where}: the reference headline has no {of}")
    return [("", float(value), float(reference.headline[of]))]
