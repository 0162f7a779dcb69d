"""A figure printed beside the bound it is judged by, written once for every report: rounded to ``digits``
decimals unless that rounding would cross the bound (0.8954 against >= 0.90 printed "0.90" reads as a pass that
the verdict calls a miss), in which case one more decimal at a time, until the figure shown is on the same side
of the bound as the figure judged. A figure and its verdict then never contradict each other."""

from __future__ import annotations

import math

# The comparisons a check makes (verdicts.result): the figure on the left, the bound on the right.
OPS = (">=", "<=", ">", "<", "==")
_MOST = 12  # decimals tried before the exact repr, which reads back as the very float judged


def holds(figure: float, op: str, bound: float) -> bool:
    if op == ">=":
        return figure >= bound
    if op == "<=":
        return figure <= bound
    if op == ">":
        return figure > bound
    if op == "<":
        return figure < bound
    if op == "==":
        return figure == bound
    raise ValueError(f"{op!r}: not a comparison ({', '.join(OPS)})")


def against(figure: float, op: str | None, bound: float | None, digits: int = 2) -> str:
    """``figure`` with ``digits`` decimals, or more where fewer would put it on the other side of ``bound``
    (never fewer). No bound, no comparison (or a figure that is no finite number): just ``digits``."""
    if bound is None or not op or op not in OPS or not math.isfinite(figure) or not math.isfinite(bound):
        return f"{figure:.{digits}f}"
    judged = holds(figure, op, bound)
    for d in range(digits, _MOST + 1):
        shown = f"{figure:.{d}f}"
        if holds(float(shown), op, bound) == judged:
            return shown
    return repr(figure)
