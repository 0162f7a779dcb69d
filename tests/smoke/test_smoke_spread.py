"""A size's spread and its stalls: the bimodal 256-token case of issue 17, and sizes that are merely noisy."""

import pytest

from pdrepro.smoke.spread import NAGLE, NOT_NAGLE, OTHER, spread, stall

# One run's 256-token Mooncake transfers as the issue reported them: three of five near 60 ms, two near 0.6 ms.
BIMODAL_256 = [61.2, 0.62, 59.8, 0.58, 60.4]


def test_spread_is_min_median_max():
    assert spread(BIMODAL_256) == {"min": 0.58, "median": 59.8, "max": 61.2}


def test_the_reported_bimodal_size_is_a_stall_with_the_delayed_ack_signature():
    st = stall(BIMODAL_256)
    assert (st["stalled"], st["of"]) == (3, 5)
    assert st["fast_ms_median"] == pytest.approx(0.60)
    assert st["slow_ms_median"] == pytest.approx(60.4)
    assert st["extra_ms"] == pytest.approx(59.8)
    assert st["delayed_ack_signature"] and st["likely_cause"] == NAGLE


def test_one_stalled_transfer_of_five_counts():
    st = stall([3.1, 3.0, 44.0, 3.2, 2.9])
    assert (st["stalled"], st["of"]) == (1, 5) and st["likely_cause"] == NAGLE


@pytest.mark.parametrize("ms", [
    [55.0, 60.0, 71.0, 58.0, 90.0],     # a loaded host: 60 % spread, one group
    [0.3, 0.9, 0.5, 0.4, 0.6],          # 3x apart but well under 10 ms: small-size jitter
    [5.0],                              # nothing to split
])
def test_noise_is_not_a_stall(ms):
    assert stall(ms) is None


def test_outside_the_delayed_ack_band_the_cause_is_not_claimed():
    st = stall([2.0, 2.1, 900.0, 2.2, 1.9])
    assert not st["delayed_ack_signature"] and st["likely_cause"] == OTHER


def test_with_nodelay_forced_or_delayed_acks_off_a_stall_is_not_blamed_on_nagle():
    assert stall(BIMODAL_256, nagle_ruled_out=True)["likely_cause"] == NOT_NAGLE
