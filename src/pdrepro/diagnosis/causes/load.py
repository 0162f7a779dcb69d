"""Load: transfers that wait because other requests are in flight.

From a load sweep's steps (analysis/load.py, the load's summary): the per-request KV transfer time at each step
against the step with the fewest requests in flight. Transfer time inflated from p50_low to p50_high leaves
p50_low / p50_high of the bandwidth, so load can cost 1 - p50_low / p50_high; a step whose p99 over p50 exceeds
the scenario's bound is a fault.

From one run whose transfers overlapped (analysis/overlap.py, the rows' in-flight figures from the prefill
lines' entry times and phases): where the median request shared the path with others, its transfer time is set
against what the same bytes take alone: the run's own transfers that moved alone (where at least ALONE_MIN did),
else the transfer engine alone on the same box (the summary's engine ceiling). Taking at least twice that
(WELL_ABOVE) is load; it can cost 1 - alone / median transfer time. Below that, a server's own overhead over the
engine alone could account for it, so it is not named. A run whose transfers never overlapped rules load out."""

from __future__ import annotations

from typing import Any

from ..evidence import Member, RunEvidence
from ..gaps import Gaps, fraction
from .base import Answer, Cause, Cleared, Finding, Missing, item

# The fewest transfers that moved alone whose median stands for the path unshared.
ALONE_MIN = 3
# The least share of the transfer time the sharing must explain: the median transfer takes twice the alone time.
WELL_ABOVE = 0.5
FIX = ("serve at the step before the transfer time rises (`pdrepro load` names it), or add prefill/decode servers "
       "or rails so each transfer has its own")


class Load(Cause):
    name = "load"

    def read(self, ev: RunEvidence, gaps: Gaps) -> Answer:
        if ev.load is None:
            return _in_run(ev)
        steps = [s for s in ev.load.steps if s.status == "done" and s.transfer_ms_p50 and s.transfer_ms_p50 > 0]
        if len(steps) < 2:
            return Missing("the load sweep measured a transfer time at fewer than two steps (the prefill servers' "
                           "request lines in RUN/logs, with entry times)")
        # Fewest in flight first: a step with no cap (None) holds the most.
        def inflight(s) -> float:
            return float("inf") if s.concurrency is None else float(s.concurrency)
        low = min(steps, key=inflight)
        high = max(steps, key=lambda s: s.transfer_ms_p50 or 0.0)
        loss = fraction(low.transfer_ms_p50 or 0.0, high.transfer_ms_p50 or 1.0)
        bound = ev.load.thresholds.max_transfer_p99_over_p50
        tails = [s for s in steps if bound is not None and s.transfer_p99_over_p50 is not None
                 and s.transfer_p99_over_p50 > bound]
        evidence = tuple(item("figure", f"steps/{s.name}", f"step {s.name} (concurrency {s.concurrency}, rate "
                                                           f"{s.request_rate}): transfer p50 {s.transfer_ms_p50:.2f} ms, "
                                                           f"p99/p50 {s.transfer_p99_over_p50 or 0:.2f} over "
                                                           f"{s.transfer_samples} requests") for s in steps)
        if loss < 0.1 and not tails:
            return Cleared(f"the transfer time holds within 10% from step {low.name} to the slowest, {high.name}")
        return Finding(fault=bool(tails), loss=loss,
                       summary=f"the KV transfer takes {high.transfer_ms_p50:.2f} ms at step {high.name} against "
                               f"{low.transfer_ms_p50:.2f} ms at {low.name}: requests in flight cost "
                               f"{loss * 100:.0f}% of the bandwidth"
                               + (f"; p99/p50 above {bound:g} at {', '.join(s.name for s in tails)}" if tails else ""),
                       evidence=evidence, fix=FIX)


def _alone(m: Member, row: Any) -> tuple[float, str] | None:
    """What the row's bytes take alone, in ms, and whose figure it is: the run's own lone transfers, else the
    engine alone on the same box; None where the run holds neither."""
    if (row.alone_transfer_samples or 0) >= ALONE_MIN and row.alone_transfer_ms_median:
        return row.alone_transfer_ms_median, f"the {row.alone_transfer_samples} of this run's transfers that moved alone"
    cell = (m.summary.engine_ceiling or {}).get(str(row.prompt_len)) if m.summary is not None else None
    engine = cell.engine_GB_s if cell is not None and not cell.contradiction else None
    if engine is None or engine <= 0 or not row.kv_bytes:
        return None
    return row.kv_bytes / (engine * 1e9) * 1000, f"the engine alone on the same box ({engine:.3f} GB/s)"


def _placed(ev: RunEvidence) -> list[tuple[Member, Any, float, float]]:
    """(run, row, median in flight, median transfer ms) of each length whose requests' transfers were placed."""
    out = []
    for m in ev.summaries():
        for row in m.summary.rows if m.summary is not None else []:
            flight, ms = getattr(row, "transfers_in_flight_median", None), row.transfer_ms_median
            if flight is not None and ms:
                out.append((m, row, float(flight), float(ms)))
    return out


def _in_run(ev: RunEvidence) -> Answer:
    """Load from the runs' own overlapping transfers (module docstring)."""
    placed = _placed(ev)
    if not placed:
        return Missing("no load sweep's steps (load-state.json), and no run's prefill request lines place their "
                       "transfers in time (entry_time and the phase durations, --enable-request-time-stats-logging): "
                       "run `pdrepro load` to set transfer waits against requests in flight"
                       + (f" ({ev.composite_problem})" if ev.composite_problem else ""))
    shared = [p for p in placed if p[2] > 1]
    if not shared:
        most = max(row.transfers_in_flight_max or 1 for _, row, _f, _ms in placed)
        alone = "each measured transfer moved alone" if most == 1 else \
            f"the median measured transfer moved alone at every length (at most {most} overlapped one)"
        return Cleared(f"{alone}, by the prefill log's entry times and phases: requests in flight did not share the "
                       "path")
    judged = [(m, row, flight, ms, ref) for m, row, flight, ms in shared if (ref := _alone(m, row)) is not None]
    if not judged:
        return Missing(f"the transfers overlapped (median {max(p[2] for p in shared):g} in flight), but the run holds "
                       "no time for the same bytes alone: no transfer moved alone and no engine alone was measured "
                       "(RUN/engine-ceiling.json)")
    m, row, flight, ms, (alone_ms, whose) = max(judged, key=lambda j: fraction(j[4][0], j[3]))
    cost = fraction(alone_ms, ms)
    where = f"{m.rel} at {row.prompt_len} tokens" if m.rel != "." else f"at {row.prompt_len} tokens"
    if cost < WELL_ABOVE:
        return Cleared(f"the transfers overlapped ({flight:g} in flight {where}) but took {ms:.2f} ms against "
                       f"{alone_ms:.2f} ms for {whose}: less than twice")
    log = ev.rel(m.run.prefill_log)
    evidence = tuple(item("figure", log, f"{r.prompt_len} tokens: {f:g} transfers in flight (median over "
                                         f"{r.transfers_placed} measured requests, at most {r.transfers_in_flight_max}"
                                         f"); transfer {t:.2f} ms median against {a:.2f} ms for {w}")
                     for mm, r, f, t, (a, w) in judged if mm is m)
    return Finding(fault=False, loss=cost,
                   summary=f"{flight:g} KV transfers in flight {where} (the prefill log's request lines): each took "
                           f"{ms:.2f} ms against {alone_ms:.2f} ms for {whose}: requests in flight cost "
                           f"{cost * 100:.0f}% of the bandwidth",
                   evidence=evidence, fix=FIX)
