"""The whole-job line (core/progress.py): its ETA arithmetic on a clock the test drives, and properties of it on
any durations: never negative, none before a member ends, never more members left than the job has."""

from __future__ import annotations

from depth import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from pdrepro.core.progress import JobClock, eta_s, fmt_s


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_eta_is_the_mean_of_the_members_run_times_those_left():
    clock = Clock()
    job = JobClock(4, clock=clock)
    assert job.begin("mooncake") == "member 1 of 4 (mooncake), elapsed 0m00s, ETA unknown until the first ends"
    clock.now += 60
    job.end()
    clock.now += 5  # between members: counted in elapsed, not in a member's time
    line = job.begin("nixl")
    assert line == "member 2 of 4 (nixl), elapsed 1m05s, ETA 3m00s (from the 1 member done)"
    clock.now += 120
    job.end()
    # mean 90 s, two members left (this one and the next)
    assert job.begin("c").endswith("elapsed 3m05s, ETA 3m00s (from the 2 members done)")


def test_skipped_members_count_in_the_position_not_in_the_mean():
    clock = Clock()
    job = JobClock(3, clock=clock)
    job.skip()
    assert job.begin("b").startswith("member 2 of 3 (b)")
    clock.now += 30
    job.end()
    assert job.begin("c") == "member 3 of 3 (c), elapsed 0m30s, ETA 0m30s (from the 1 member done)"


def test_a_clock_that_steps_back_gives_no_negative_figure():
    clock = Clock()
    job = JobClock(2, clock=clock)
    job.begin("a")
    clock.now -= 500
    job.end()
    assert job.durations == [0.0]
    assert job.begin("b") == "member 2 of 2 (b), elapsed 0m00s, ETA 0m00s (from the 1 member done)"


def test_fmt_s():
    assert [fmt_s(s) for s in (0, 7.4, 59.6, 750, 3600, 3900, -5)] == \
        ["0m00s", "0m07s", "1m00s", "12m30s", "1h00m", "1h05m", "0m00s"]


@settings(max_examples=examples(200))
@given(st.lists(st.floats(min_value=-1e6, max_value=1e6, allow_nan=False), max_size=20),
       st.integers(min_value=0, max_value=1000))
def test_eta_never_negative_and_none_only_before_a_member_ends(durations, remaining):
    left = eta_s(durations, remaining)
    assert (left is None) == (not durations)
    assert left is None or left >= 0
    assert left is None or left <= max([0.0, *durations]) * remaining + 1e-6


@settings(max_examples=examples(100))
@given(st.lists(st.floats(min_value=0, max_value=1e5, allow_nan=False), min_size=1, max_size=20),
       st.floats(min_value=0, max_value=1e5, allow_nan=False))
def test_eta_grows_with_the_members_left_and_with_slower_members(durations, slower):
    for remaining in range(5):
        assert eta_s(durations, remaining) <= eta_s(durations, remaining + 1)
    assert eta_s(durations, 3) <= eta_s([*durations, max(durations) + slower], 3) + 1e-6


@settings(max_examples=examples(100))
@given(st.integers(min_value=1, max_value=30), st.data())
def test_the_line_counts_every_member_once_and_the_clock_only_forwards(total, data):
    clock = Clock()
    job = JobClock(total, clock=clock)
    for n in range(1, total + 1):
        if data.draw(st.booleans()):
            job.skip()
            continue
        line = job.begin(f"m{n}")
        assert line.startswith(f"member {n} of {total} (m{n}), elapsed ")
        assert "-" not in line.split("(m", 1)[1]  # no negative figure anywhere in it
        clock.now += data.draw(st.floats(min_value=-10, max_value=1e4, allow_nan=False))
        job.end()
    assert job.position == total
