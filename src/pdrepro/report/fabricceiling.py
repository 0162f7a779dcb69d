"""The report's line on the payload ceiling: the peak held against the raw line rate and against what the
RoCE MTU the run recorded leaves of it for payload (core.roce), or, where the run recorded no MTU, a line that
says so instead of assuming one."""

from __future__ import annotations

from ..core.roce import WIRE_OVERHEAD_BYTES, payload_ceiling_GB_s
from ..rundir.runprovenance import HostFacts, NicPort, RunProvenance
from ..rundir.summarymodel import Summary
from .placement import no_fabric


def _roce_ports(prov: RunProvenance | None) -> tuple[str, list[tuple[str, NicPort]]] | str:
    """The recording host's name and its active RoCE ports, or what the run lacks to say them."""
    if prov is None or not prov.recorded():
        return "no provenance.json"
    host = prov.host
    if not isinstance(host, HostFacts) or host.nics is None:
        return "no RDMA ports (provenance.json host.nics)"
    ports = [(f"{dev}/{num}", port) for dev, nic in sorted(host.nics.items()) for num, port in sorted(nic.ports.items())
             if port.link_layer == "Ethernet" and "ACTIVE" in (port.state or "")]
    return host.hostname or "?", ports


def ceiling_lines(summary: Summary) -> list[str]:
    """One headline line: the peak against the raw line rate and against the payload ceiling of the RoCE MTU
    the run recorded (the lowest one where ports differ: the transfer is striped over all of them)."""
    peak, line_rate = summary.headline.peak_bandwidth_GB_s, summary.line_rate_GB_s
    if not summary.has_fabric or no_fabric(summary) or peak is None or not line_rate:
        return []
    raw = f"{100 * peak / line_rate:.1f} % of the raw {line_rate:g} GB/s line rate"
    found = _roce_ports(summary.provenance)
    if isinstance(found, str):
        return [f"- Against the fabric: {raw}; the run recorded {found}, so no RoCE MTU and no payload ceiling "
                "is stated."]
    host, ports = found
    mtus = {name: port.roce_mtu for name, port in ports if port.roce_mtu is not None}
    if not mtus:
        why = ("no active RoCE port" if not ports else
               "no RoCE MTU for " + ", ".join(name for name, _ in ports))
        return [f"- Against the fabric: {raw}; the run recorded {why} on {host} (provenance.json host.nics), so no "
                "payload ceiling is stated."]
    mtu = min(mtus.values())
    ceiling = payload_ceiling_GB_s(line_rate, mtu)
    which = (f"RoCE MTU {mtu} on every active RoCE port of {host}" if len(set(mtus.values())) == 1 else
             f"the lowest RoCE MTU on {host}, {mtu} (" + ", ".join(f"{n} {m}" for n, m in sorted(mtus.items())) + ")")
    return [f"- Against the fabric: {raw}, and {100 * peak / ceiling:.1f} % of the {ceiling:.1f} GB/s payload ceiling "
            f"at {which} ({WIRE_OVERHEAD_BYTES} bytes of RoCE v2 framing per packet; decimal GB/s)."]
