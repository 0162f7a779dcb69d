"""Each RDMA port's fabric baseline, as summary.json carries it, and the one judgement of it.

`pdrepro baseline` runs ib_write_bw on every NIC pair alone (one after the other) and then on all pairs at
once. A port that reaches its line rate alone but not with the others points at what they share (a PCIe
switch, the host bridge, the switch's uplink); one short even alone points at the port itself (its MTU,
its link, its cable). The judgement lives here, below both its users, so `pdrepro baseline` (measuring)
and the verdicts and report (reading a run) draw the same line.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pydantic import Field

from ..core.text import printable
from .summarybase import _Open

PHASES = ("alone", "together")
# How a check's line names the way the port was measured.
PHASE_WORDS = {"alone": "alone", "together": "with all ports at once"}


class BaselinePort(_Open):
    """One local port's ib_write_bw figures, alone and with every port at once, against its own line rate."""

    port: str = Field(description="the local RDMA device measured")
    remote: str | None = Field(default=None, description="the peer's device it was paired with")
    line_rate_GB_s: float | None = Field(default=None, description="the port's own line rate from sysfs, decimal GB/s")
    alone_GB_s: float | None = Field(default=None, description="BW average with this pair only, decimal GB/s")
    together_GB_s: float | None = Field(default=None, description="BW average while every pair ran, decimal GB/s")
    alone_note: str | None = Field(default=None, description="why there is no figure alone, if so")
    together_note: str | None = Field(default=None, description="why there is no figure all at once, if so")


class BaselinePorts(_Open):
    """baseline.json's per-port figures, the aggregate next to them, and the floor they were held to."""

    min_port_fraction: float | None = Field(
        default=None, description="the share of its own line rate each port must reach (the scenario's "
                                  "thresholds.min_port_baseline_fraction)")
    aggregate_GB_s: float | None = Field(default=None, description="the sum over the ports all at once, decimal GB/s")
    ports: list[BaselinePort] = Field(default_factory=list)


@dataclass(frozen=True)
class PortVerdict:
    """One port measured one way, judged. state: pass, short, unmeasured or contradiction."""

    port: str
    phase: str
    figure: float | None
    line_rate_GB_s: float | None
    bound: float | None
    state: str
    detail: str

    @property
    def passed(self) -> bool:
        return self.state == "pass"


def judge_port(p: BaselinePort, phase: str, fraction: float) -> PortVerdict:
    """The port's figure PHASE ('alone' or 'together') against FRACTION of its own line rate."""
    figure = p.alone_GB_s if phase == "alone" else p.together_GB_s
    note = p.alone_note if phase == "alone" else p.together_note
    line = p.line_rate_GB_s if p.line_rate_GB_s is not None and math.isfinite(p.line_rate_GB_s) \
        and p.line_rate_GB_s > 0 else None
    bound = None if line is None else fraction * line
    head = f"port {p.port} {PHASE_WORDS[phase]}:"

    def verdict(state: str, detail: str) -> PortVerdict:
        # One printable line: the port's name and a tool's error come from a record, which may hold anything.
        text = printable(f"{head} {detail}")
        return PortVerdict(p.port, phase, figure, line, bound, state, text)

    if figure is None or not math.isfinite(figure) or figure <= 0:
        why = note or ("no figure recorded" if figure is None else f"{figure} GB/s, which is no measurement")
        return verdict("unmeasured", f"not measured ({why})")
    if line is None:
        return verdict("unmeasured", f"{figure:.2f} GB/s, but the record gives no line rate for the port to hold "
                                     "it against; run `pdrepro baseline` again")
    pct = 100 * figure / line
    if figure > line:
        return verdict("contradiction", f"{figure:.2f} GB/s is above its {line:.1f} GB/s line rate, which no port "
                                        "exceeds (a unit misread, or traffic over another port): no measurement")
    if figure < fraction * line:
        return verdict("short", f"{figure:.2f} GB/s = {pct:.1f} % of its {line:.1f} GB/s line rate, short of "
                                f"{100 * fraction:g} %")
    return verdict("pass", f"{figure:.2f} GB/s = {pct:.1f} % of its {line:.1f} GB/s line rate, at least "
                           f"{100 * fraction:g} %")


def judge_ports(ports: list[BaselinePort], fraction: float) -> list[PortVerdict]:
    """Every port, alone then all at once, in the record's order."""
    return [judge_port(p, phase, fraction) for p in ports for phase in PHASES]
