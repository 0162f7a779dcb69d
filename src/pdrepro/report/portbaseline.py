"""The report's fabric baseline per port: each port's ib_write_bw figure alone and with all ports at once,
as a share of its own line rate, next to the aggregate, so a short fabric names the port that fell short."""

from __future__ import annotations

from tabulate import tabulate

from ..rundir.portbaseline import PHASES, judge_port
from ..rundir.summarymodel import Summary
from ..scenario.sections import Thresholds

DASH = "—"
_STATES = {"pass": "PASS", "short": "FAIL (short)", "unmeasured": "FAIL (not measured)",
           "contradiction": "FAIL (above line rate)"}


def _cell(figure: float | None, line: float | None) -> str:
    if figure is None:
        return DASH
    return f"{figure:.2f}" + (f" ({100 * figure / line:.1f} %)" if line else "")


def port_baseline_section(summary: Summary) -> list[str]:
    found = summary.baseline_ports
    if found is None or not found.ports:
        return []
    floor = found.min_port_fraction
    if floor is None:
        floor = Thresholds().min_port_baseline_fraction
    table = []
    for p in found.ports:
        verdicts = [judge_port(p, phase, floor) for phase in PHASES]
        failed = [v for v in verdicts if not v.passed]
        table.append([p.port, p.remote or "", DASH if p.line_rate_GB_s is None else f"{p.line_rate_GB_s:.1f}",
                      _cell(p.alone_GB_s, verdicts[0].line_rate_GB_s), _cell(p.together_GB_s, verdicts[1].line_rate_GB_s),
                      "; ".join(f"{_STATES[v.state]} {v.phase}" for v in failed) or "PASS",
                      "; ".join(n for n in (p.alone_note, p.together_note) if n)])
    headers = ["Port", "Peer port", "Line rate (GB/s)", "Alone (GB/s, % of line)", "All at once (GB/s, % of line)",
               "Verdict", "Note"]
    total = found.aggregate_GB_s
    return ["## Fabric baseline per port", "",
            "`pdrepro baseline` ran ib_write_bw on each NIC pair alone, one after the other, then on all pairs at "
            f"once. Each port must reach {100 * floor:g} % of its own line rate both ways. Short alone points at the "
            "port (link, MTU, cable); short only all at once points at what the ports share (PCIe switch, host "
            "bridge, the switch's uplink). Above the line rate is no measurement.", "",
            tabulate(table, headers=headers, tablefmt="github", disable_numparse=True), "",
            f"Aggregate, all ports at once: {DASH if total is None else f'{total:.2f}'} GB/s.", ""]
