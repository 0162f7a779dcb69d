"""Load: transfers that wait because other requests are in flight. From a load sweep's steps (analysis/load.py,
the load's summary): the per-request KV transfer time at each step against the step with the fewest requests in
flight. Transfer time inflated from p50_low to p50_high leaves p50_low / p50_high of the bandwidth, so load can cost
1 - p50_low / p50_high; a step whose p99 over p50 exceeds the scenario's bound is a fault. A run that is no load
sweep holds no steps to set against each other."""

from __future__ import annotations

from ..evidence import RunEvidence
from ..gaps import Gaps, fraction
from .base import Answer, Cause, Cleared, Finding, Missing, item


class Load(Cause):
    name = "load"

    def read(self, ev: RunEvidence, gaps: Gaps) -> Answer:
        if ev.load is None:
            return Missing("no load sweep's steps (load-state.json): run `pdrepro load` to set transfer waits against "
                           "requests in flight" + (f" ({ev.composite_problem})" if ev.composite_problem else ""))
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
                       evidence=evidence,
                       fix="serve at the step before the transfer time rises (`pdrepro load` names it), or add "
                           "prefill/decode servers or rails so each transfer has its own")
