"""The servers' phases: where a request's time goes besides the KV transfer, from the request lines each server
logs (analysis/phases.py, the summary's phase_ms_median, keyed "<role>.<phase>"). A waiting phase (bootstrap,
queue, alloc_wait) is time the request spends neither computing nor moving its KV; at the length where one takes
the largest part of the median TTFT, that part is what it can cost, and more than WAITING_FAULT of the TTFT is a
fault."""

from __future__ import annotations

from ..evidence import RunEvidence
from ..gaps import Gaps
from .base import Answer, Cause, Cleared, Finding, Missing, item

WAITING = ("bootstrap", "queue", "alloc_wait")
# A waiting phase above this share of the median TTFT is a fault of its own, whatever the gaps.
WAITING_FAULT = 0.25


class Phases(Cause):
    name = "servers' phases"

    def read(self, ev: RunEvidence, gaps: Gaps) -> Answer:
        worst: tuple[float, str, float, float, int, str, int] | None = None
        seen = False
        for m in ev.summaries():
            for row in (m.summary.rows if m.summary is not None else []):
                phases, ttft = getattr(row, "phase_ms_median", None) or {}, row.ttft_ms_median  # a smoke's rows have none
                if not phases or ttft is None or ttft <= 0:
                    continue
                seen = True
                for key, ms in phases.items():
                    if key.split(".", 1)[-1] in WAITING and ms >= 0:
                        part = min(1.0, ms / ttft)
                        samples = (getattr(row, "phase_samples", None) or {}).get(key, 0)
                        if worst is None or part > worst[0]:
                            worst = (part, key, ms, ttft, row.prompt_len, m.rel, samples)
        if not seen:
            return Missing("no request line times the servers' phases (SGLang's request-stats lines in RUN/logs, "
                           "with their *_duration figures)")
        if worst is None or worst[0] < 0.05:
            return Cleared("no waiting phase (bootstrap, queue, alloc_wait) takes 5% of a length's median TTFT")
        part, key, ms, ttft, L, rel, samples = worst
        role = key.split(".", 1)[0]
        log = ev.rel(ev.root / rel / "logs" / f"{role}.log") if rel != "." else f"logs/{role}.log"
        return Finding(fault=part > WAITING_FAULT, loss=part,
                       summary=f"{key} takes {ms:.1f} ms of the {ttft:.1f} ms median TTFT at {L} tokens ({rel}, "
                               f"median of {samples} requests): {part * 100:.0f}% of it waiting",
                       evidence=(item("figure", log, f"{key}_duration median {ms:.1f} ms over {samples} request lines "
                                                     f"at {L} tokens; TTFT median {ttft:.1f} ms"),),
                       fix={"bootstrap": "the handshake between prefill and decode: keep the servers warm (send a few "
                                         "requests first) and check the bootstrap port is reached directly",
                            "queue": "requests wait for a running batch: lower the request rate or concurrency, or add "
                                     "servers",
                            "alloc_wait": "the decode waits for KV memory: raise --mem-fraction-static on the decode or "
                                          "lower its concurrency"}.get(key.split(".", 1)[-1], "see the phase's server"))
