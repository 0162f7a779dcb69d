"""The report's per-rail table: each port's bytes, share of the mean per rail and rate against its own
line rate, per length, so a red check leads to the rail that carried too little (or impossibly much)."""

from __future__ import annotations

from tabulate import tabulate

from ..core.units import GB
from ..rundir.summarymodel import NicRail, Row, Summary, Witness
from ..verdicts.gates import tcp_without_rdma

DASH = "—"


def _f(value: float | None, digits: int) -> str:
    return DASH if value is None else f"{value:.{digits}f}"


def _verdict(rail: NicRail, min_share: float) -> str:
    """The rail's verdict as the checks draw it (verdicts/gates.py): share below the floor or a rate above
    the port's own line rate fails; a port not named in ib_devices.json is listed, not judged."""
    if not rail.judged:
        return "not judged"
    if rail.share_of_mean is None or rail.share_of_mean < min_share:
        return "FAIL (share)"
    if rail.rate_GB_s is not None and rail.line_rate_GB_s and rail.rate_GB_s > rail.line_rate_GB_s:
        return "FAIL (above line rate)"
    return "PASS"


def _length_table(row: Row, min_share: float) -> list[str]:
    rails = row.nic_rails or []
    table = [[r.role, r.port, r.counter or "", _f(None if r.bytes is None else r.bytes / GB, 2),
              _f(r.share_of_mean, 2), _f(r.rate_GB_s, 2), _f(r.line_rate_GB_s, 1), _verdict(r, min_share),
              r.note or ""] for r in rails]
    headers = ["Node", "Port", "Counter", "Moved (GB)", "Share (x mean per rail)", "Rate (GB/s)",
               "Line rate (GB/s)", "Verdict", "Note"]
    if not any(r.note for r in rails):  # a column no row fills says nothing
        table, headers = [line[:-1] for line in table], headers[:-1]
    out = [f"### {row.prompt_len} tokens", ""]
    if row.nic_rails_note:
        out += [f"No rail judged: {row.nic_rails_note}.", ""]
    return out + [tabulate(table, headers=headers, tablefmt="github", disable_numparse=True), ""]


def rails_section(summary: Summary) -> list[str]:
    rows = [r for r in summary.served_rows() if r.nic_rails]
    if not rows or tcp_without_rdma(summary, summary.scenario.transport):
        return []
    w = summary.witness or Witness()
    floor = w.min_rail_share if w.min_rail_share is not None else 0.5
    out = ["## NIC witness per rail", "",
           "Each port ib_devices.json names for the GPUs in use is a rail, judged on its own from the counters "
           "read (prefill: transmitted, decode: received): its bytes over the mean per rail of its node must reach "
           f"{floor:g} (an even split is 1.00), and its rate over the window between the readings cannot exceed "
           "its own line rate. Other ports (storage, management) are listed, not judged.", ""]
    if not any(r.judged for row in rows for r in row.nic_rails or []):
        # Nothing judged at any length: one line says why rather than a table of unjudged ports per length.
        why = next((row.nic_rails_note for row in rows if row.nic_rails_note), "no port is named as a rail")
        return out[:2] + [f"No rail judged: {why}.", ""]
    for row in rows:
        out += _length_table(row, floor)
    return out
