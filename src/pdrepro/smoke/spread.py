"""The spread of one size's timed transfers, and the stalls hidden in it.

A median alone hides a bimodal size: at 256 tokens three of five Mooncake
transfers once took about 60 ms and two about 0.6 ms, so the median said
0.02 GB/s while the link gives 1+ GB/s. Each way's min / median / max is
kept, and a size whose transfers fall into a fast and a much slower group is
named, with how much slower and what that signature points at.
"""

from __future__ import annotations

import statistics

# Two groups count as separate when the slower starts at least this many times
# above, and this many ms above, the faster one ends: run-to-run noise on a busy
# host spreads transfers by tens of percent, not by a factor of four and 10 ms.
STALL_RATIO = 4.0
STALL_GAP_MS = 10.0
# Linux holds a delayed ACK for 40 ms at least (TCP_DELACK_MIN) and 200 ms at most
# (TCP_DELACK_MAX): a sender whose last short segment Nagle keeps back until that
# ACK arrives stalls for about that long, once or twice per transfer.
DELAYED_ACK_MS = (30.0, 450.0)

NAGLE = ("Nagle's algorithm against delayed ACKs (Mooncake's TCP transport leaves Nagle on, Linux delays an ACK "
         "by 40-200 ms; runs with --tcp-nodelay or with delayed ACKs off show no such stall: "
         "docs/guide/smoke.md, Mid-size stalls)")
NOT_NAGLE = ("not Nagle against delayed ACKs: this run had TCP_NODELAY on (--tcp-nodelay) or delayed ACKs off "
             "(--quickack); other work on the host (CPU or memory contention) is the likely cause")
OTHER = ("outside the delayed-ACK band (30-450 ms extra); other work on the host (CPU or memory contention) "
         "is the likely cause")


def spread(ms: list[float]) -> dict:
    """min / median / max of the timed transfers, in ms."""
    return {"min": min(ms), "median": statistics.median(ms), "max": max(ms)}


def stall(ms: list[float], nagle_ruled_out: bool = False) -> dict | None:
    """The slow group of a size's transfers, or None when they form one group.

    Split at the widest ratio between neighbours in sorted order; a group of
    one counts (one stalled transfer of five is still a stall)."""
    if len(ms) < 2:
        return None
    v = sorted(ms)
    i = max(range(len(v) - 1), key=lambda k: v[k + 1] / v[k] if v[k] > 0 else float("inf"))
    fast, slow = v[: i + 1], v[i + 1:]
    if v[i + 1] < STALL_RATIO * v[i] or v[i + 1] - v[i] < STALL_GAP_MS:
        return None
    extra = statistics.median(slow) - statistics.median(fast)
    if nagle_ruled_out:
        cause = NOT_NAGLE
    elif DELAYED_ACK_MS[0] <= extra <= DELAYED_ACK_MS[1]:
        cause = NAGLE
    else:
        cause = OTHER
    return {"stalled": len(slow), "of": len(v), "fast_ms_median": statistics.median(fast),
            "slow_ms_median": statistics.median(slow), "extra_ms": extra,
            "delayed_ack_signature": DELAYED_ACK_MS[0] <= extra <= DELAYED_ACK_MS[1], "likely_cause": cause}
