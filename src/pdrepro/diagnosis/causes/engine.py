"""The engine's own ceiling: the transfer engine alone on the same box (RUN/engine-ceiling.json or gpu-check's
RUN/engine-ceiling/result.json, read by rundir/engineceiling.py into the summary's engine_ceiling) moving one
request's KV outside the server. What it leaves below the line rate no setting of the server can win back, so at
the length of the largest gap to the line rate it accounts for 1 - engine alone / line rate of the figure. A
per-request figure well above the engine alone (the summary's contradiction) is a fault: the two are not of one
box."""

from __future__ import annotations

from ..evidence import Member, RunEvidence
from ..gaps import Gaps, fraction
from .base import Answer, Cause, Cleared, Finding, Missing, item


def _cells(m: Member) -> list[tuple[int, float, float, float | None, bool]]:
    """(length, request GB/s, engine alone GB/s, line rate GB/s, contradiction) per length of ``m``."""
    s = m.summary
    if s is None or not s.engine_ceiling:
        return []
    out = []
    for key, cell in s.engine_ceiling.items():
        if not key.isdigit() or cell.engine_GB_s is None or cell.bandwidth_GB_s is None:
            continue
        if cell.engine_GB_s <= 0 or cell.bandwidth_GB_s <= 0:
            continue
        line = s.line_rate_GB_s if s.line_rate_GB_s and s.line_rate_GB_s > 0 else None
        out.append((int(key), cell.bandwidth_GB_s, cell.engine_GB_s, line, cell.contradiction))
    return out


def engine_short_of_line(ev: RunEvidence) -> float | None:
    """The least the engine alone stays below the line rate at any length, as a fraction; None unmeasured."""
    found = [fraction(engine, line) for m in ev.summaries() for _L, _bw, engine, line, bad in _cells(m)
             if line is not None and not bad]
    return min(found) if found else None


class EngineCeiling(Cause):
    name = "engine's own ceiling"

    def read(self, ev: RunEvidence, gaps: Gaps) -> Answer:
        cells = [(m, *cell) for m in ev.summaries() for cell in _cells(m)]
        if not cells:
            return Missing("no measurement of the transfer engine alone on the same box (RUN/engine-ceiling.json, "
                           "or `pdrepro gpu-check --out RUN/engine-ceiling`)")
        bad = [c for c in cells if c[5]]
        if bad:
            m, L, bw, engine, _line, _ = bad[0]
            return Finding(fault=True, loss=0.0,
                           summary=f"{m.rel} at {L} tokens: per request {bw:.2f} GB/s, above the engine alone's "
                                   f"{engine:.2f} GB/s: the ceiling is not of this box",
                           evidence=(item("figure", self._file(ev, m), f"{L} tokens: engine alone {engine:.3f} GB/s, "
                                                                       f"per request {bw:.3f} GB/s"),),
                           fix="measure the engine alone again on the run's own box (`make onebox-host-proof`)")
        lined = [(m, L, bw, engine, line) for m, L, bw, engine, line, _bad in cells
                 if line is not None and not m.no_fabric]
        if not lined and all(m.no_fabric for m, *_ in cells):
            # With no fabric the engine alone is the reference the run is held to (the "engine alone" gap), not a
            # part of a shortfall to a line rate it never had.
            return Cleared("the KV never met a fabric (TCP on a box without an RDMA device): the engine alone is the "
                           "reference this run is held to, not a cause below a line rate")
        if not lined:
            return Missing("the engine alone is measured, but no line rate to hold it against (the scenario's link)")
        # The length where the run falls furthest below the line rate: what the engine alone leaves there.
        m, L, bw, engine, line = max(lined, key=lambda c: (fraction(c[2], c[4]), -c[1]))
        loss = fraction(engine, line)
        if loss < 0.05:
            return Cleared(f"the engine alone reaches {engine:.2f} of {line:.2f} GB/s at {L} tokens")
        return Finding(fault=False, loss=loss,
                       summary=f"the transfer engine alone moves {engine:.2f} GB/s at {L} tokens on this box, "
                               f"{loss * 100:.0f}% below the {line:.2f} GB/s line rate ({m.rel}; per request "
                               f"{bw:.2f} GB/s)",
                       evidence=(item("figure", self._file(ev, m),
                                      f"{L} tokens: engine alone {engine:.3f} GB/s; line rate {line:.3f} GB/s"),),
                       fix="the engine's own path is the ceiling here: the transport it used, its block size and "
                           "the NIC it reaches decide it; raise it before tuning the server")

    @staticmethod
    def _file(ev: RunEvidence, m: Member) -> str:
        source = m.summary.engine_ceiling_source if m.summary is not None else None
        name = source.file if source is not None else "engine-ceiling"
        return ev.rel(m.run.root / name)
