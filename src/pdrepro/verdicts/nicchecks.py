"""The NIC checks of one measured length: the ports' own byte counts against the model's KV bytes (the witness),
each rail's share and rate, and no figure above a line rate."""

from __future__ import annotations

from ..rundir.summarymodel import Row
from .result import CheckResult, check, not_applicable_result


def witness_checks(L: int, row: Row, line_rate: float | None, floor: float, applies: bool = True) -> list[CheckResult]:
    """The NICs' own byte counts (witness.py): they must show the KV the model says was sent,
    and cannot have run faster than the line."""
    if not applies:
        return [not_applicable_result("nic_witness", L, floor, "% of KV", ">=")]
    share = row.nic_kv_share_pct
    nodes = ", ".join(f"{role} {n.counter}" for role, n in (row.nic_nodes or {}).items() if n.kv_share_pct is not None)
    if share is None:
        detail = f"length {L}: NIC byte counts not measured: {row.nic_problem or 'no counter record'}"
        out = [CheckResult("nic_witness", L, None, floor, "% of KV", False, detail, ">=")]
    else:
        c = check("nic_witness", L, share, ">=", floor, "% of KV",
                   f"bytes the NICs moved ({nodes}) as a share of the model's KV bytes:")
        if not c.passed:
            c = CheckResult(c.name, L, share, c.bound, c.unit, False,
                            c.detail + " (the KV did not cross the RDMA ports: TCP fallback or a dead path?)", c.op)
        out = [c]
    rate = row.nic_rate_GB_s
    if rate is not None and line_rate:
        out.append(check("nic_within_line_rate", L, rate, "<=", line_rate, "GB/s",
                          "NIC counters' average rate (above the line rate no counter is right)"))
    return out


def rail_checks(L: int, row: Row, min_share: float, applies: bool = True, required: bool = False) -> list[CheckResult]:
    """Each rail (a port ib_devices.json names for the GPUs in use) on its own: its share of the KV bytes
    against the mean per rail, and its rate against its own line rate (above it, the counters are wrong).
    ``required``: the scenario's KV must cross the fabric, so a length with no rail judged (no map in the run, or
    no counters) fails as not measured; elsewhere (TCP allowed, one box) no rail judged is no check."""
    rails = [r for r in row.nic_rails or [] if r.judged]
    if not applies:
        return [not_applicable_result("rail_share", L, min_share, "x the mean per rail", ">=")] if rails else []
    # Without readings the witness already fails as not measured; with readings and no rail, the spread is unknown.
    if not rails and required and row.nic_rails:
        why = row.nic_rails_note or row.nic_problem or "no port counters of the length"
        return [CheckResult("rail_share", L, None, min_share, "x the mean per rail", False,
                            f"length {L}: no rail judged, so the KV's spread over the RDMA ports is not measured: {why}",
                            ">=")]
    out: list[CheckResult] = []
    for r in rails:
        what = f"rail {r.name} ({r.counter or 'no counter'}) share of its node's KV bytes:"
        c = check("rail_share", L, r.share_of_mean, ">=", min_share, "x the mean per rail", what)
        if r.share_of_mean is None and r.note:
            c = CheckResult(c.name, L, None, min_share, c.unit, False, f"{c.detail} ({r.note})", c.op)
        elif not c.passed:
            c = CheckResult(c.name, L, c.figure, min_share, c.unit, False,
                            f"{c.detail} (the KV was not spread over the rails: check the GPU-to-NIC map and the "
                            "transfer engine's device list)", c.op)
        out.append(c)
        if r.rate_GB_s is not None and r.line_rate_GB_s:
            c = check("rail_within_line_rate", L, r.rate_GB_s, "<=", r.line_rate_GB_s, "GB/s",
                       f"rail {r.name} average rate against its own line rate:")
            if not c.passed:
                c = CheckResult(c.name, L, c.figure, c.bound, c.unit, False,
                                f"{c.detail} (above its line rate is a contradiction: the readings are not of "
                                "this port in this window)", c.op)
            out.append(c)
    return out
