"""The servers' phases: where a request's time goes besides the KV transfer, from the request lines each server
logs (analysis/phases.py, the summary's phase_ms_median, keyed "<role>.<phase>"). A waiting phase (bootstrap,
queue, alloc_wait) is time the request spends neither computing nor moving its KV; at the length where one takes
the largest part of the median TTFT, that part is what it can cost, and more than WAITING_FAULT of the TTFT is a
fault. Where the servers' own /server_info (the run's provenance) shows a cap on running requests below the
requests the sweep keeps in flight, that cap is cited and named in the fix: it is what makes a request wait."""

from __future__ import annotations

from ...rundir.diagnosismodel import EvidenceItem
from ..evidence import Member, RunEvidence
from ..gaps import Gaps
from .base import Answer, Cause, Cleared, Finding, Missing, item

WAITING = ("bootstrap", "queue", "alloc_wait")
# A waiting phase above this share of the median TTFT is a fault of its own, whatever the gaps.
WAITING_FAULT = 0.25


class Phases(Cause):
    name = "servers' phases"

    def read(self, ev: RunEvidence, gaps: Gaps) -> Answer:
        worst: tuple[float, str, float, float, int, Member, int] | None = None
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
                            worst = (part, key, ms, ttft, row.prompt_len, m, samples)
        if not seen:
            return Missing("no request line times the servers' phases (SGLang's request-stats lines in RUN/logs, "
                           "with their *_duration figures)")
        if worst is None or worst[0] < 0.05:
            return Cleared("no waiting phase (bootstrap, queue, alloc_wait) takes 5% of a length's median TTFT")
        part, key, ms, ttft, L, member, samples = worst
        rel = member.rel
        capped = _capped(ev, member)
        role = key.split(".", 1)[0]
        log = ev.rel(ev.root / rel / "logs" / f"{role}.log") if rel != "." else f"logs/{role}.log"
        return Finding(fault=part > WAITING_FAULT, loss=part,
                       summary=f"{key} takes {ms:.1f} ms of the {ttft:.1f} ms median TTFT at {L} tokens ({rel}, "
                               f"median of {samples} requests): {part * 100:.0f}% of it waiting",
                       evidence=(item("figure", log, f"{key}_duration median {ms:.1f} ms over {samples} request lines "
                                                     f"at {L} tokens; TTFT median {ttft:.1f} ms"),
                                 *([capped[0]] if capped else [])),
                       fix=capped[1] if capped else
                       {"bootstrap": "the handshake between prefill and decode: keep the servers warm (send a few "
                                     "requests first) and check the bootstrap port is reached directly",
                        "queue": "requests wait for a running batch: lower the request rate or concurrency, or add "
                                 "servers",
                        "alloc_wait": "the decode waits for KV memory: raise --mem-fraction-static on the decode or "
                                      "lower its concurrency"}.get(key.split(".", 1)[-1], "see the phase's server"))


def _capped(ev: RunEvidence, m: Member) -> tuple[EvidenceItem, str] | None:
    """The servers' cap on running requests (their /server_info's max_running_requests, as the sweep recorded it)
    where it lies below the requests the sweep keeps in flight: the evidence item and the fix, or None."""
    s = m.summary
    infos = (s.provenance.server_info or {}) if s is not None and s.provenance is not None else {}
    flight = m.scenario.sweep.max_concurrency if m.scenario is not None else None
    caps = []
    for role, info in sorted(infos.items()):
        cap = (getattr(info, "model_extra", None) or {}).get("max_running_requests")
        if isinstance(cap, int) and not isinstance(cap, bool) and cap > 0:
            caps.append((cap, role))
    if not caps or flight is None or min(caps)[0] >= flight:
        return None
    cap, role = min(caps)
    where = ev.rel(m.run.root / "provenance.json")
    told = ", ".join(f"{r} {c}" for c, r in caps)
    return (item("knob", where, f"server_info max_running_requests: {told}; the sweep keeps {flight} "
                                          "requests in flight (the scenario's sweep.max_concurrency)"),
            f"the servers run at most {cap} request(s) at once ({role}'s --max-running-requests) while {flight} are in "
            f"flight: raise --max-running-requests to {flight} or more, or lower the concurrency")
