"""A figure printed against its bound (core/figures.py): the figure shown, read back as a number, is on the
same side of the bound as the figure judged, whatever the figure, the bound and the comparison."""

from __future__ import annotations

import math

import pytest
from depth import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from pdrepro.core.figures import OPS, against, holds


def test_the_smokes_pooled_ratio_is_not_rounded_up_to_its_target():
    assert against(0.8954, ">=", 0.90) == "0.895"
    assert against(0.8996, ">=", 0.90) == "0.8996"
    assert against(0.9012, ">=", 0.90) == "0.90"  # a figure on the right side keeps its two decimals
    assert against(100.004, "<=", 100) == "100.004"
    assert against(0.8954, None, None) == "0.90"
    assert against(0.8954, ">=", 0.90, digits=1) == "0.895"


def test_an_unknown_comparison_is_refused():
    with pytest.raises(ValueError):
        holds(1.0, "=>", 1.0)


FIGURES = st.floats(allow_nan=False, allow_infinity=False, min_value=-1e9, max_value=1e9)


@settings(max_examples=examples(300))
@given(FIGURES, st.sampled_from(OPS), FIGURES, st.integers(min_value=0, max_value=4))
def test_the_figure_shown_never_crosses_its_bound(figure, op, bound, digits):
    shown = against(figure, op, bound, digits)
    assert holds(float(shown), op, bound) == holds(figure, op, bound), (figure, op, bound, shown)
    decimals = len(shown.split(".")[1]) if "." in shown and "e" not in shown else digits
    assert decimals >= digits  # never fewer decimals than asked


@settings(max_examples=examples(200))
@given(FIGURES, st.sampled_from(OPS), st.integers(min_value=0, max_value=4))
def test_a_figure_near_its_bound_is_shown_close_to_it(bound, op, digits):
    # Just below and just above the bound: still on its side, and within rounding of the figure.
    for figure in (math.nextafter(bound, -math.inf), math.nextafter(bound, math.inf), bound):
        shown = against(figure, op, bound, digits)
        assert holds(float(shown), op, bound) == holds(figure, op, bound)
        assert abs(float(shown) - figure) <= 0.5 * 10 ** -digits + 1e-9 * max(1.0, abs(figure))
