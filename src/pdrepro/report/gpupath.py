"""The report's note on the GPU-memory path: where the engine alone, moving GPU memory, falls well short of what
the fabric carries from host memory, PCIe relaxed ordering is one setting to look at (a Mooncake tuning note
on GPU-memory RDMA names it among the causes of such a gap), and the pinned engine leaves it off."""

from __future__ import annotations

from ..rundir.summarymodel import Summary
from .placement import no_fabric

KNOB = "MC_IB_PCI_RELAXED_ORDERING"
# The engine alone below this share of the fabric's figure is "the short path": a gap of that size is no
# per-request overhead but the path itself.
SHORT_SHARE = 0.5


def relaxed_ordering_note(summary: Summary) -> list[str]:
    """A paragraph naming the knob when the engine alone (GPU memory) is under SHORT_SHARE of the fabric (the
    measured host-memory baseline, else the line rate); nothing otherwise, or over one box without a fabric."""
    if no_fabric(summary) or not summary.engine_ceiling:
        return []
    engine = max((c.engine_GB_s for c in summary.engine_ceiling.values() if c.engine_GB_s is not None), default=None)
    fabric, what = ((summary.baseline_GB_s, "the measured fabric ceiling (`pdrepro baseline`, host memory)")
                    if summary.baseline_GB_s else (summary.line_rate_GB_s, "the line rate"))
    if engine is None or not fabric or engine >= SHORT_SHARE * fabric:
        return []
    return [f"The GPU-memory path is the short one: the engine alone peaks at {engine:.2f} GB/s, "
            f"{100 * engine / fabric:.0f} % of {what}, {fabric:.2f} GB/s. PCIe relaxed ordering is one setting "
            f"behind such a gap: `pdrepro doctor` shows whether the PCIe path to each NIC allows it (its "
            f"relaxed-ordering row), and {KNOB}=1 asks the engine to use it (the pinned transfer engine leaves it at 0, "
            f"off); measure both with `pdrepro tune --grid {KNOB}=0,1`.", ""]
