"""Line rate: what the active ports add up to, against what the scenario needs."""

from __future__ import annotations

from ...scenario.model import Scenario
from .base import FAIL, PASS, WARN, Check, Context, Facts


def needed_line_rate_GB_s(scenario: Scenario) -> tuple[float, str] | None:
    """The line rate a node needs for the scenario's bandwidth thresholds to be reachable, and why.

    The demand is the highest bandwidth the thresholds ask for (peak, per length, or the peak
    utilization of the scenario's own link). No RoCE transfer reaches 100 % of line rate: the
    demand is divided by the peak utilization the scenario's reference run reached, when it
    states one."""
    t, link = scenario.thresholds, scenario.link
    asks = []
    if t.min_peak_bandwidth_GB_s is not None:
        asks.append((t.min_peak_bandwidth_GB_s, f"a {t.min_peak_bandwidth_GB_s:g} GB/s peak"))
    if t.min_bandwidth_GB_s:
        L, bw = max(t.min_bandwidth_GB_s.items(), key=lambda kv: kv[1])
        asks.append((bw, f"{bw:g} GB/s at length {L}"))
    if t.min_peak_utilization_pct is not None and link is not None:
        bw = t.min_peak_utilization_pct / 100 * link.line_rate_GB_s
        asks.append((bw, f"{t.min_peak_utilization_pct:g} % of its {link.line_rate_GB_s:g} GB/s link ({bw:.1f} GB/s)"))
    if not asks:
        return None
    demand, what = max(asks, key=lambda a: a[0])
    reached = (scenario.reference.headline.get("peak_utilization_pct") if scenario.reference else None) or 100.0
    need = demand / (reached / 100)
    why = f"scenario {scenario.name} needs {what}"
    if reached < 100:
        why += f"; at the {reached:g} % of line rate its reference run reached, that takes {need:.1f} GB/s of line rate"
    return need, why


def line_rate_GB_s(f: Facts) -> float:
    return sum((p.rate_GB_s for p in f.active_ports), 0.0)


def check_line_rate(ctx: Context, f: Facts) -> Check:
    ports = f.active_ports
    if not ports:
        return Check("line-rate", ctx.need, "no active port: line rate 0 GB/s", "see port-state")
    total_Gb = sum(p.rate_Gb_s or 0 for p in ports)
    rates = sorted({p.rate_Gb_s or 0.0 for p in ports})
    each = (f"{len(ports)} x {rates[0]:g}" if len(rates) == 1 else " + ".join(f"{p.rate_Gb_s or 0:g}" for p in ports))
    detail = (f"{each} Gb/s = {total_Gb:g} Gb/s = {_GBs(total_Gb / 8)} GB/s (decimal), "
              "the denominator of KV-transfer utilization on this node")
    scenario = ctx.scenario
    needed = needed_line_rate_GB_s(scenario) if ctx.role and scenario is not None else None
    if scenario is not None and needed is not None and total_Gb / 8 < needed[0]:
        lost = [f"{p.name} {p.state}" for d in f.devices for p in d.ports if not p.is_active]
        link = scenario.link
        full = link.nic_rate_Gb_s if link is not None else max(p.rate_Gb_s or 0 for p in ports)
        lost += [f"{p.name} at {p.rate_text or 'an unreadable rate'}" for p in ports if (p.rate_Gb_s or 0) < full]
        short = "; ports short of it: " + ", ".join(lost) if lost else ""
        return Check("line-rate", FAIL, detail + f"; {needed[1]}, more than this node's {_GBs(total_Gb / 8)} GB/s"
                     + short, "bring every RDMA port up at its full rate (cable, switch port, `ibstat`), or judge "
                     "the run with a scenario whose link and thresholds match this fabric")
    if len(rates) > 1:
        return Check("line-rate", WARN, detail + f"; ports differ ({', '.join(p.rate_text for p in ports)})",
                     "a port below its nominal rate usually means a bad cable or a mis-negotiated switch port")
    if ctx.scenario is not None and ctx.scenario.link is not None:
        want = ctx.scenario.link.line_rate_GB_s
        if abs(want - total_Gb / 8) > 0.01 * want:
            link = ctx.scenario.link
            return Check("line-rate", WARN,
                         detail + f"; scenario {ctx.scenario.name} assumes {link.nics_per_node} x {link.nic_rate_Gb_s:g} Gb/s "
                         f"= {want:.1f} GB/s", "the report divides by the scenario's link: copy the scenario and set its "
                         "`link` to this node's NICs, or compare against the published figures knowing the fabric differs")
    return Check("line-rate", PASS, detail)


def _GBs(x: float) -> str:
    return f"{x:.1f}" if x >= 10 else f"{x:.2f}"
