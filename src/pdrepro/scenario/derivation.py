"""Why each threshold has its value: ``thresholds.derivation`` in a scenario, as data.

A reproduction's pass mark is a rule applied to the published figures ("at least 80 % of the published bandwidth
at each length"). Kept as data beside the numbers, ``pdrepro scenarios show`` prints it (a YAML comment would be
stripped). A rule that names a factor and a published figure can be held to the numbers (``problems``): the shipped
scenarios are, by the tests, and `scenarios show` names any rule a copied and edited scenario no longer meets. Loading
never refuses one: a copy with its own bounds is a user's right, and judging by it stays possible."""

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


def check(thresholds: Any, source: str) -> None:
    """Refuse a derivation naming no threshold, or one with a factor but no figure (or the reverse): a typo."""
    names = set(type(thresholds).model_fields) - {"derivation"}
    for key, rule in thresholds.derivation.items():
        where = f"{source}: thresholds.derivation.{key}"
        if key not in names:
            raise UserError(f"{where} names no threshold; use one of {', '.join(sorted(names))}")
        if (rule.factor is None) != (rule.of is None):
            raise UserError(f"{where}: give factor and of together (the threshold is factor x the published `of`), "
                            "or neither for a rule in words only")


def problems(thresholds: Any, reference: Any) -> list[str]:
    """Each rule with a factor whose threshold is not that multiple of the published figure, in words."""
    out = []
    for key, rule in thresholds.derivation.items():
        if rule.factor is None or rule.of is None:
            continue
        for label, value, published in _pairs(getattr(thresholds, key, None), rule.of, reference):
            if value is None or published is None:
                out.append(f"{key}{label}: no {'threshold' if value is None else 'published ' + rule.of} to hold")
            elif abs(value - rule.factor * published) > ROUNDING:
                out.append(f"{key}{label} is {value:g}, not {rule.factor:g} x the published {rule.of} {published:g} "
                           f"({rule.factor * published:.2f})")
    return out


def _pairs(value: Any, of: str, reference: Any) -> list[tuple[str, float | None, float | None]]:
    """(which, threshold value, published figure) for each value the rule covers; None where one is missing."""
    if reference is None:
        return [("", None if value is None else 0.0, None)]
    if of in PER_LENGTH:
        rows = {r.prompt_len: float(getattr(r, of)) for r in reference.rows}
        if not isinstance(value, dict) or not value:
            return [("", None, None)]
        return [(f"[{length}]", float(v), rows.get(length)) for length, v in sorted(value.items())]
    published = reference.headline.get(of)
    return [("", None if value is None else float(value), None if published is None else float(published))]
