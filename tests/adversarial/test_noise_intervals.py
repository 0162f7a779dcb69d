"""How sure a figure made of repeats is (analysis.interval) and the one rule that calls a figure better
(verdicts.noise), held on hostile data: any runs of any requests give an interval that holds the figure, states
its level and method, comes out the same for the same seed, widens with the spread of the data, and never
calls a figure better than itself. Seeded as every adversarial test is (tests/conftest.py)."""

from __future__ import annotations

import statistics

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pdrepro.analysis import interval
from pdrepro.rundir.noisemodel import Interval
from pdrepro.verdicts import noise

values = st.floats(min_value=0.5, max_value=5000, allow_nan=False, allow_infinity=False)
one_run = st.lists(values, min_size=1, max_size=12)
runs_of = st.lists(one_run, min_size=1, max_size=5)
SMALL = 300  # resamples: enough for the properties, cheap for hypothesis's many examples


def _mean(runs):
    return interval.bootstrap(runs, interval.mean_of(), resamples=SMALL)


@given(runs_of)
def test_the_interval_holds_the_figure_and_states_how_it_was_drawn(runs):
    got = _mean(runs)
    assert got is not None
    assert got.low <= got.point <= got.high
    assert got.point == pytest.approx(statistics.fmean(statistics.fmean(r) for r in runs), abs=1e-3)
    assert got.level == 0.95 and got.method.startswith("95 % bootstrap, 300 resamples, seeded (36)")
    assert got.runs == len(runs) and got.requests == sum(len(r) for r in runs)
    assert ("runs resampled" in got.method) == (len(runs) >= 2)


@given(runs_of, st.integers(min_value=0, max_value=2**32 - 1))
def test_the_same_seed_gives_the_same_interval(runs, seed):
    one = interval.bootstrap(runs, interval.mean_of(), resamples=SMALL, seed=seed)
    again = interval.bootstrap([list(r) for r in runs], interval.mean_of(), resamples=SMALL, seed=seed)
    assert one == again


@given(runs_of, st.floats(min_value=1.0, max_value=20.0))
def test_the_interval_widens_with_the_spread_of_the_data(runs, factor):
    """The same data stretched about its mean by ``factor``: the same draws, each stretched, so the interval is."""
    centre = statistics.fmean(v for r in runs for v in r)
    wide = [[centre + factor * (v - centre) for v in r] for r in runs]
    narrow, widened = _mean(runs), _mean(wide)
    assert widened.high - widened.low >= (narrow.high - narrow.low) * factor - 2e-3


@given(runs_of, st.sampled_from([True, False]))
def test_a_figure_is_never_better_or_worse_than_the_same_data(runs, higher):
    one, two = _mean(runs), _mean([list(r) for r in runs])
    assert noise.standing(one, two, higher_is_better=higher) == "within the noise"


@given(runs_of, st.floats(min_value=0.8, max_value=0.95))
def test_the_level_is_stated_and_a_lower_level_never_widens(runs, level):
    low = interval.bootstrap(runs, interval.mean_of(), resamples=SMALL, level=level)
    high = _mean(runs)
    assert low.level == level and low.method.startswith(f"{level * 100:g} % bootstrap")
    assert low.high - low.low <= high.high - high.low + 1e-3


def _at(low: float, high: float) -> Interval:
    return Interval(point=(low + high) / 2, low=low, high=high, level=0.95, runs=2, requests=2, method="test")


@given(st.floats(0, 100), st.floats(0, 10), st.floats(0, 100), st.floats(0, 10))
def test_better_only_when_the_intervals_separate(a, wa, b, wb):
    first, second = _at(a, a + wa), _at(b, b + wb)
    said = noise.standing(first, second, higher_is_better=True)
    if first.low > second.high:
        assert said == "better"
    elif first.high < second.low:
        assert said == "worse"
    else:
        assert said == "within the noise"
    # A time: lower is better, so the same intervals read the other way round.
    flipped = noise.standing(first, second, higher_is_better=False)
    assert flipped == {"better": "worse", "worse": "better"}.get(said, said)


def test_without_an_interval_nothing_is_judged():
    assert noise.standing(None, _at(1, 2), True) == "not judged"
    assert noise.standing(_at(1, 2), None, True) == "not judged"


def test_one_run_borrows_the_repeats_noise_and_says_so():
    alone = interval.bootstrap([[10.0, 10.1, 9.9, 10.0]], interval.mean_of())
    borrowed = interval.bootstrap([[10.0, 10.1, 9.9, 10.0]], interval.mean_of(), borrowed=[-2.0, 0.5, 1.5],
                                  borrowed_from="the baseline's 3 repeats")
    assert alone is not None and borrowed is not None
    assert "one run: its requests resampled" in alone.method and "baseline" not in alone.method
    assert "the baseline's 3 repeats" in borrowed.method
    assert borrowed.high - borrowed.low > 10 * (alone.high - alone.low)
    # Runs of its own: nothing borrowed, whatever is offered.
    own = interval.bootstrap([[10.0, 10.1], [11.0, 11.2]], interval.mean_of(), borrowed=[-50.0, 50.0],
                             borrowed_from="x")
    assert own is not None and own.high < 20 and "x" not in own.method


def test_no_values_no_interval_and_a_bad_level_is_refused():
    assert interval.bootstrap([], interval.mean_of()) is None
    assert interval.bootstrap([[float("nan")], []], interval.mean_of()) is None
    with pytest.raises(ValueError):
        interval.bootstrap([[1.0]], interval.mean_of(), level=1.0)


def test_the_rate_is_the_run_summarys_bandwidth():
    """A run's figure is the KV bytes over its median transfer time: Row.bandwidth_GB_s."""
    got = interval.bootstrap([[10.0, 20.0, 30.0]], interval.rate_of(2_000_000_000))
    assert got is not None and got.point == pytest.approx(2e9 / 0.020 / 1e9)


def test_the_noise_floor_is_the_spread_between_repeats():
    floor = interval.noise_floor("the baseline's 3 repeated runs", [1.315, 1.632, 1.294], "GB/s")
    assert floor is not None and floor.spread == pytest.approx(0.338) and floor.spread_pct == pytest.approx(23.9, abs=0.1)
    assert interval.noise_floor("one", [1.0], "GB/s") is None


def test_a_huge_run_is_resampled_in_slices_and_gives_the_same_interval(monkeypatch):
    """A bench file claiming many requests is drawn in slices (bounded memory); slicing changes no draw's figure
    set, only how many are drawn at once, so a small slice gives an interval as sure as one drawn whole."""
    runs = [[float(i % 97) for i in range(5000)], [float(i % 89) + 1 for i in range(4000)]]
    whole = interval.bootstrap(runs, interval.mean_of(), resamples=200)
    monkeypatch.setattr(interval, "CHUNK", 10_000)  # two resamples of a run at a time
    sliced = interval.bootstrap(runs, interval.mean_of(), resamples=200)
    assert whole is not None and sliced is not None
    assert sliced.low <= sliced.point <= sliced.high and sliced.point == whole.point
    assert abs((sliced.high - sliced.low) - (whole.high - whole.low)) < 0.5 * (whole.high - whole.low)
