"""PCIe relaxed ordering on the path to each NIC, and whether the transfer engine is told to use it."""

from __future__ import annotations

from ...host import pcie
from .base import PASS, WARN, Check, Context, Facts

KNOB = "MC_IB_PCI_RELAXED_ORDERING"
# At the pinned Mooncake the knob's mode defaults to 0 (off); 1 asks for relaxed ordering where the verbs
# library can register memory with it, 2 is "auto" (the same as 1 at that commit).
KNOB_MEANING = {"0": "off", "1": "on where supported", "2": "auto"}


def knob_line(ctx: Context) -> str:
    value, origin = ctx.server_env(KNOB)
    if value is None:
        return f"{KNOB} unset: the pinned engine leaves relaxed ordering off (0)"
    meaning = KNOB_MEANING.get(value.strip(), "not 0, 1 or 2: the engine ignores it and stays off")
    return f"{KNOB}={value} ({origin}): {meaning}"


def nic_paths(ctx: Context, f: Facts) -> dict[str, list[pcie.Hop]]:
    """Each PCIe NIC's path, the NIC first (software devices have none)."""
    return {d.name: pcie.path_hops(ctx.sysfs_root, d.pci_path) for d in f.devices if not d.is_virtual}


def check_relaxed_ordering(ctx: Context, f: Facts) -> Check:
    paths = f.relaxed_paths if f.relaxed_paths is not None else nic_paths(ctx, f)
    if not paths:
        return Check("relaxed-ordering", PASS, "no RDMA device on PCIe: nothing to read; " + knob_line(ctx))
    on, off, unknown = [], [], []
    for name, hops in paths.items():
        verdict = pcie.allowed(hops)
        if verdict is True:
            on.append(name)
        elif verdict is False:
            off.append(f"{name} (off at {', '.join(h.bdf for h in hops if h.enabled is False)})")
        else:
            why = next((h.note for h in hops if h.enabled is None), "no PCIe function on its path")
            unknown.append(f"{name} ({why})")
    parts = ([f"allowed on {', '.join(on)}"] if on else []) + ([f"disabled on {', '.join(off)}"] if off else []) \
        + ([f"unknown on {', '.join(unknown)}"] if unknown else [])
    detail = "PCIe path NIC to root port: " + "; ".join(parts) + "; " + knob_line(ctx)
    if off:
        return Check("relaxed-ordering", WARN, detail,
                     "set Enable Relaxed Ordering in the Device Control register of each function named (firmware or "
                     "BIOS setting, or `setpci -s BDF CAP_EXP+8.w=0010:0010` as root); then "
                     f"{KNOB}=1 for the servers lets the engine use it for GPU memory")
    if unknown:
        return Check("relaxed-ordering", WARN, detail,
                     "run `pdrepro doctor` as root: config space past its first 64 bytes is readable only by root")
    return Check("relaxed-ordering", PASS, detail)
