"""Rail skew: the KV did not spread evenly over the rails the GPUs in use were given (the per-rail witness,
analysis/rails.py, in the summary's rows). A transfer spread over n rails ends when its busiest rail does, so with
the busiest carrying a share p of the node's bytes the node reaches 1 / (n p) of what an even split gives: the
skew can cost 1 - 1 / (n p) of the figure. A rail below the scenario's min_rail_share of the mean is a fault."""

from __future__ import annotations

from ...rundir.diagnosismodel import EvidenceItem
from ...scenario.sections import Thresholds
from ..evidence import Member, RunEvidence
from ..gaps import Gaps
from .base import Answer, Cause, Cleared, Finding, Missing, item

DEFAULT_MIN_SHARE = Thresholds.model_fields["min_rail_share"].default


def _skews(m: Member) -> list[tuple[float, int, str, dict[str, int]]]:
    """(loss, length, role, bytes per judged rail) for each node and length of ``m`` with two or more rails."""
    out = []
    s = m.summary
    for row in (s.rows if s is not None else []):
        by_role: dict[str, dict[str, int]] = {}
        # A smoke's rows witness no rails (their model has no such field): getattr, not an attribute error.
        for rail in getattr(row, "nic_rails", None) or []:
            if rail.judged and rail.bytes is not None and rail.bytes >= 0 and rail.share_of_mean is not None:
                by_role.setdefault(rail.role, {})[rail.port] = rail.bytes
        for role, rails in by_role.items():
            total = sum(rails.values())
            if len(rails) < 2 or total <= 0:
                continue
            busiest = max(rails.values()) / total
            out.append((max(0.0, 1.0 - 1.0 / (len(rails) * busiest)), row.prompt_len, role, rails))
    return out


def _min_share(m: Member) -> float:
    witness = m.summary.witness if m.summary is not None else None
    value = getattr(witness, "min_rail_share", None) if witness is not None else None
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else DEFAULT_MIN_SHARE


class RailSkew(Cause):
    name = "rail skew"

    def read(self, ev: RunEvidence, gaps: Gaps) -> Answer:
        worst: tuple[float, int, str, dict[str, int], Member] | None = None
        for m in ev.summaries():
            for loss, L, role, rails in _skews(m):
                if worst is None or loss > worst[0]:
                    worst = (loss, L, role, rails, m)
        if worst is None and (why := ev.no_fabric_why()):
            return Cleared(f"{why}, so there were no rails to split it over")
        if worst is None:
            notes = [note for m in ev.summaries() if m.summary is not None for r in m.summary.rows
                     if (note := getattr(r, "nic_rails_note", None))]
            return Missing("no length has two or more judged rails on a node (the per-rail witness needs the NIC "
                           "counters per port and RUN/ib_devices.json naming the GPUs' NICs)"
                           + (f": {notes[0]}" if notes else ""))
        loss, L, role, rails, m = worst
        total = sum(rails.values())
        mean = total / len(rails)
        shares = {port: b / total for port, b in sorted(rails.items())}
        starved = [p for p, b in rails.items() if b / mean < _min_share(m)]
        evidence: list[EvidenceItem] = [
            item("counter", ev.rel(m.run.counters_file(L)),
                 f"{role} {port}: {share * 100:.1f}% of the node's KV bytes at {L} tokens ({rails[port]} bytes)")
            for port, share in shares.items()]
        split = "/".join(f"{s * 100:.0f}" for s in shares.values())
        if not starved and loss < 0.05:
            return Cleared(f"the rails of every node split the KV evenly (worst: {role} at {L} tokens, {split})")
        return Finding(fault=bool(starved), loss=loss,
                       summary=f"the {role} node's rails split the KV {split} at {L} tokens ({m.rel}); the busiest "
                               f"rail sets the pace, costing up to {loss * 100:.0f}% of an even split"
                               + (f"; below {_min_share(m):g} x the mean: {', '.join(sorted(starved))}" if starved else ""),
                       evidence=tuple(evidence),
                       fix="give each GPU the NIC on its own PCIe switch (--disaggregation-ib-device / ib_devices.json "
                           "from `pdrepro ib-devices`), and check each rail's link with `pdrepro baseline`")
