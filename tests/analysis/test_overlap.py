"""Transfers in flight at once (analysis/overlap.py): each request's transfer window from its prefill line, the
count of windows overlapping each (against a brute-force count over random windows), the row's figures, and
that no figure a log can hold turns into NaN, infinity or a traceback."""

from __future__ import annotations

import math

import pytest
from depth import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from pdrepro.analysis.overlap import TOLERANCE_S, in_flight, overlap_figures, transfer_window
from pdrepro.parsers.reqstats import parse_line

# A prefill line in the exact format of the recorded H200 logs (SGLang 0.5.15.post1); the figures are chosen.
LINE = ("[2026-12-04 05:44:38] ReqTimeStats(rid=r{i}, bootstrap_room={room}, input_len=1024, cached_input_len=0, "
        "output_len=1, type=prefill): bootstrap_duration={b}ms, queue_duration={q}ms, forward_duration={f}ms, "
        "entry_time={entry}, transfer_speed={speed} GB/s, transfer_total=12.00 MB, #retries=0")


def line(i, entry="1796363078.904", b="0.50", q="0.50", f="99.00", speed="0.25"):
    return parse_line(LINE.format(i=i, room=1000 + i, entry=entry, b=b, q=q, f=f, speed=speed))


def brute(windows, tolerance):
    return [sum(1 for c, d in windows if min(b, d) - max(a, c) > tolerance) for a, b in windows]


def test_a_window_ends_when_the_request_completed_and_lasts_its_transfer():
    stat = line(1, entry="1000.000", b="10.00", q="5.00", f="85.00", speed="0.25")
    start, end = transfer_window(stat)
    assert end == pytest.approx(1000.1)  # entry + 10 + 5 + 85 ms
    assert end - start == pytest.approx(12 / 1024 / 0.25)  # 12 MiB at 0.25 GiB/s: 46.9 ms


@pytest.mark.parametrize("text", [
    LINE.replace("entry_time={entry}, ", "").format(i=1, room=1, b="1", q="1", f="1", speed="1"),
    LINE.replace("queue_duration={q}ms, ", "").format(i=1, room=1, entry="1.0", b="1", f="1", speed="1"),
    LINE.format(i=1, room=1, entry="1.0", b="1", q="1", f="1", speed="0.00"),
    LINE.format(i=1, room=1, entry="1.0", b="1", q="1", f="99999999999", speed="1"),
    LINE.format(i=1, room=1, entry="1e308", b="1", q="1", f="1", speed="1"),
])
def test_a_line_that_cannot_place_its_transfer_has_no_window(text):
    stat = parse_line(text)
    assert stat is not None and transfer_window(stat) is None


def test_the_row_counts_overlaps_of_its_measured_requests_among_every_request_of_the_length():
    # Three requests entering together share the path; a fourth, a second later, moves alone.
    held = [line(i) for i in range(3)] + [line(3, entry="1796363079.904")]
    figures = overlap_figures(held[1:], held)  # the first is the warm-up: counted as sharing, not measured
    assert figures["transfers_in_flight_median"] == 3.0 and figures["transfers_in_flight_max"] == 3
    assert figures["transfers_placed"] == 3 and figures["alone_transfer_samples"] == 1
    assert figures["alone_transfer_ms_median"] == pytest.approx(12 / 1024 / 0.25 * 1000)


def test_back_to_back_transfers_of_a_serialising_server_are_alone():
    # Each begins where the last ended, to the millisecond the log states: no overlap.
    held = [line(i, entry=f"{1000 + i * 0.1:.3f}", speed="0.12") for i in range(5)]  # 97.7 ms each, 100 ms apart
    figures = overlap_figures(held, held)
    assert figures["transfers_in_flight_median"] == 1.0 and figures["alone_transfer_samples"] == 5


def test_no_placed_request_gives_no_figures():
    stat = parse_line(LINE.replace("entry_time={entry}, ", "").format(i=1, room=1, b="1", q="1", f="1", speed="1"))
    assert overlap_figures([stat], [stat]) == {}


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.tuples(st.integers(0, 400), st.integers(0, 120)), max_size=60), st.sampled_from([0, 2, 10]))
def test_in_flight_equals_a_brute_force_count(raw, tolerance):
    # Whole numbers (and an even tolerance) keep every comparison exact, so the two counts must agree to the unit.
    windows = [(float(s), float(s + n)) for s, n in raw]
    counts = in_flight(windows, tolerance)
    assert counts == [max(1, c) for c in brute(windows, tolerance)]
    assert all(1 <= c <= len(windows) for c in counts)


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.tuples(st.floats(allow_nan=False, allow_infinity=False, min_value=-1e12, max_value=1e12),
                          st.floats(min_value=0, max_value=1e7, allow_nan=False)), max_size=30),
       st.floats(min_value=0, max_value=1e6, allow_nan=False))
def test_any_figures_a_log_holds_give_finite_counts(raw, speed):
    held = [line(i, entry=f"{e:.3f}", f=f"{f:.2f}", speed=f"{speed:.2f}") for i, (e, f) in enumerate(raw)]
    figures = overlap_figures(held, held)
    for value in figures.values():
        assert isinstance(value, (int, float)) and math.isfinite(value)
    assert not figures or 1 <= figures["transfers_in_flight_median"] <= len(held)


def test_the_tolerance_is_the_entry_times_resolution():
    assert TOLERANCE_S == 0.001
