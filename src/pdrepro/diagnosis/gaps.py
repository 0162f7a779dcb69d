"""The gaps a run's figures leave, each as a fraction of the reference it is held against (1 - measured /
reference, 0 where the figure meets it): the published figure (the scenario's reference rows: bandwidth, else
TTFT, where a longer time is the shortfall), the line rate and the payload ceiling at the active RoCE MTU (from
the nodes' records; not for a run whose KV never met a fabric), and the engine alone on the same box (the
summary's engine ceiling). Every figure is the
analysis' own (the summary's rows); nothing is measured again. The largest of them is what a cause's share is
a share of."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..core.roce import FULL_MTU, payload_ceiling_GB_s
from ..rundir.diagnosismodel import Gap
from .evidence import Member, RunEvidence


def _ok(x: float | None) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x > 0


def fraction(measured: float, reference: float) -> float:
    """1 - measured / reference, held within [0, 1]."""
    return min(1.0, max(0.0, 1.0 - measured / reference))


def active_mtu(ev: RunEvidence) -> int | None:
    """The smallest active RoCE MTU the nodes' records show (the path runs at the smaller end's), or None."""
    found = [roce for record in ev.nodes.values() for _port, _netdev, roce in record.port_mtus() if roce > 0]
    return min(found) if found else None


@dataclass
class Gaps:
    found: list[Gap]

    @property
    def largest(self) -> float:
        return max((g.fraction for g in self.found), default=0.0)

    def share(self, loss: float) -> float:
        """The share of the largest gap a cause that costs ``loss`` (a fraction of the figure) accounts for."""
        largest = self.largest
        if not math.isfinite(loss) or loss <= 0 or largest <= 0:
            return 0.0
        return min(1.0, loss / largest)


def _worst(found: dict[str, Gap], gap: Gap) -> None:
    if gap.name not in found or gap.fraction > found[gap.name].fraction:
        found[gap.name] = gap


def _member_gaps(m: Member, mtu: int | None, found: dict[str, Gap]) -> None:
    s = m.summary
    if s is None:
        return
    reference = {r.prompt_len: r for r in (s.scenario.reference.rows if s.scenario.reference else [])}
    # A run whose KV never met a fabric (one box over TCP, as its scenario allows) has no line rate to fall short
    # of: the report draws none for it, and its gaps are the published figure and the engine alone.
    line = s.line_rate_GB_s if s.line_rate_GB_s is not None and _ok(s.line_rate_GB_s) and not m.no_fabric else None
    ceiling = s.engine_ceiling or {}
    for row in s.rows:
        bw, L, ttft = row.bandwidth_GB_s, row.prompt_len, row.ttft_ms_median
        if bw is not None and not _ok(bw):
            bw = None
        where = f"{m.rel} at {L} tokens"
        ref = reference.get(L)
        ref_bw = ref.bandwidth_GB_s if ref is not None and ref.bandwidth_GB_s is not None and _ok(ref.bandwidth_GB_s) \
            else None
        ref_ttft = ref.ttft_ms if ref is not None and ref.ttft_ms is not None and _ok(ref.ttft_ms) else None
        if bw is not None and ref_bw is not None:
            _worst(found, Gap(name="published figure", fraction=fraction(bw, ref_bw), measured=bw, reference=ref_bw,
                              unit="GB/s", where=f"{where}, against the scenario's published bandwidth"))
        elif ttft is not None and _ok(ttft) and ref_ttft is not None:
            # A time: the run falls short by how much longer it took, as a share of its own time.
            _worst(found, Gap(name="published figure", fraction=fraction(ref_ttft, ttft), measured=ttft,
                              reference=ref_ttft, unit="ms (TTFT median)",
                              where=f"{where}, against the scenario's published TTFT"))
        if line is not None and bw is not None:
            _worst(found, Gap(name="line rate", fraction=fraction(bw, line), measured=bw, reference=line, unit="GB/s",
                              where=f"{where}, against the scenario's line rate"))
            if mtu is not None:
                payload = payload_ceiling_GB_s(line, mtu)
                _worst(found, Gap(name="payload ceiling", fraction=fraction(bw, payload), measured=bw,
                                  reference=payload, unit="GB/s",
                                  where=f"{where}, against the payload a RoCE MTU of {mtu} leaves of the line rate"))
        cell = ceiling.get(str(L))
        engine = cell.engine_GB_s if cell is not None and not cell.contradiction else None
        if bw is not None and engine is not None and _ok(engine):
            _worst(found, Gap(name="engine alone", fraction=fraction(bw, engine), measured=bw, reference=engine,
                              unit="GB/s", where=f"{where}, against the transfer engine alone on the same box"))


def _load_gaps(ev: RunEvidence, found: dict[str, Gap]) -> None:
    """A load sweep's steps share the load's logs, so they hold no summary of their own: its figure is the load
    summary's transfer time (p50) of each step, the KV of one request of its length over it, against the line rate."""
    scenario = ev.own_logs.scenario if ev.own_logs is not None else None
    line = scenario.line_rate_GB_s if scenario is not None else None
    if ev.load is None or scenario is None or line is None or not _ok(line) or ev.no_fabric_why():
        return  # a load whose KV never met a fabric has no line rate to fall short of, as a sweep's has none
    kv = scenario.kv_bytes(ev.load.prompt_len)
    for step in ev.load.steps:
        ms = step.transfer_ms_p50
        if step.status != "done" or ms is None or not _ok(ms) or not _ok(kv):
            continue
        bw = kv / (ms / 1000.0) / 1e9
        _worst(found, Gap(name="line rate", fraction=fraction(bw, line), measured=bw, reference=line, unit="GB/s",
                          where=f"step {step.name} at {ev.load.prompt_len} tokens (its transfer p50), against the "
                                "scenario's line rate"))


def measure(ev: RunEvidence) -> Gaps:
    found: dict[str, Gap] = {}
    mtu = active_mtu(ev)
    for m in ev.summaries():
        _member_gaps(m, mtu, found)
    _load_gaps(ev, found)
    return Gaps(sorted(found.values(), key=lambda g: (-g.fraction, g.name)))


def payload_loss(mtu: int) -> float:
    """What a RoCE MTU below the full one costs of the payload ceiling, as a fraction of the full MTU's."""
    return fraction(payload_ceiling_GB_s(1.0, mtu), payload_ceiling_GB_s(1.0, FULL_MTU))
