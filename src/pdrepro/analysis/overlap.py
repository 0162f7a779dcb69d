"""How many KV transfers were in flight at once, from the prefill servers' own request lines.

A disaggregated prefill line states when the request entered the server (``entry_time``, seconds since the
epoch) and how long each of its phases took: ``bootstrap_duration`` (until it joined the waiting queue),
``queue_duration`` (until its forward began) and ``forward_duration`` (from the forward to the request's
completion, which waits for its KV to reach the decode). Their sum from the entry time is when the request
completed, and its KV transfer, rank 0's ``transfer_total`` over its ``transfer_speed``, is the last stretch
before it. So each request's transfer window is [completion - transfer time, completion]: nothing is assumed
beyond what the line states.

A row carries, over the requests its transfer figures come from, the median and the largest number of
transfers of the same length whose windows overlapped each one (itself counted: 1 where it moved alone), and
the median transfer time of those that moved alone. Windows are compared with every request of the length the
logs hold (the warm-up's too: its transfers share the path as well). Two windows count as overlapping only
where they share more than a millisecond, the resolution of ``entry_time``: back-to-back transfers of a server
that serialises them are not counted as sharing the path.
"""

from __future__ import annotations

import math
import statistics
from bisect import bisect_left, bisect_right

from ..parsers.reqstats import ReqStat
from .phases import MAX_PHASE_MS

# entry_time is logged with millisecond digits: a shared stretch no longer than that is no overlap.
TOLERANCE_S = 0.001
_PHASES = ("bootstrap_duration", "queue_duration", "forward_duration")


def transfer_window(stat: ReqStat) -> tuple[float, float] | None:
    """(start, end) of the request's KV transfer in seconds since the epoch, or None where the line lacks a figure
    for it or holds one no request can have."""
    if stat.entry_time_s is None or stat.transfer_s is None:
        return None
    durations = [stat.durations_s.get(key) for key in _PHASES]
    if any(d is None or not (math.isfinite(d) and 0 <= d * 1000 <= MAX_PHASE_MS) for d in durations):
        return None
    seconds = stat.transfer_s
    if not (math.isfinite(seconds) and 0 < seconds * 1000 <= MAX_PHASE_MS):
        return None
    end = stat.entry_time_s + sum(d for d in durations if d is not None)
    # An entry time so large that the transfer vanishes in the float's precision places nothing.
    if not math.isfinite(end) or not end - seconds < end:
        return None
    return end - seconds, end


def in_flight(windows: list[tuple[float, float]], tolerance: float = TOLERANCE_S) -> list[int]:
    """Per window, how many of ``windows`` share more than ``tolerance`` seconds with it, itself counted.

    Shrinking each window by half the tolerance at both ends turns "share more than the tolerance" into a plain
    overlap of the shrunk windows; a window no longer than the tolerance shares it with none. With the shrunk
    starts and ends sorted, the windows overlapping one are those starting before it ends less those ending by
    its start (each of which also started before it ends): n log n, where a log may hold thousands."""
    half = tolerance / 2
    shrunk = [(s + half, e - half) for s, e in windows]
    live = [(s, e) for s, e in shrunk if e > s]
    starts = sorted(s for s, _ in live)
    ends = sorted(e for _, e in live)
    out = []
    for s, e in shrunk:
        if e <= s:
            out.append(1)
            continue
        out.append(bisect_left(starts, e) - bisect_right(ends, s))
    return out


def overlap_figures(samples: list[ReqStat], held: list[ReqStat]) -> dict:
    """The row's in-flight figures (module docstring) for its measured ``samples`` among ``held``, every request
    of the length the logs hold; nothing where no measured request's line places its transfer."""
    placed = [(stat, w) for stat in held if (w := transfer_window(stat)) is not None]
    counts = dict(zip((id(stat) for stat, _ in placed), in_flight([w for _, w in placed])))
    mine = [(stat, counts[id(stat)]) for stat in samples if id(stat) in counts]
    if not mine:
        return {}
    alone = [stat.transfer_s * 1000 for stat, n in mine if n == 1 and stat.transfer_s is not None]
    figures: dict = {"transfers_in_flight_median": float(statistics.median(n for _, n in mine)),
                     "transfers_in_flight_max": max(n for _, n in mine),
                     "transfers_placed": len(mine), "alone_transfer_samples": len(alone)}
    if alone:
        figures["alone_transfer_ms_median"] = statistics.median(alone)
    return figures
