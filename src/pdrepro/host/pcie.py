"""Whether the PCIe path to a NIC lets it use relaxed ordering, read from each function's config space.

A PCI Express function's Device Control register (two bytes, 8 bytes into its PCI Express capability)
holds "Enable Relaxed Ordering" in bit 4: with it clear the function never sets the relaxed-ordering
attribute on the requests it starts, whatever the RDMA library asks for per memory region. The NIC and
every bridge above it, up to the root port, are read, each through sysfs's ``config`` file of that
function (``<sysfs>/devices/pci<dom>:<bus>/.../<bdf>/config``).

Linux shows other users than root only the first 64 bytes of that file (the standard header); the
PCI Express capability lies beyond them on every device, so without root the answer is unknown and
recorded as such, never guessed. The capability is found by walking the capability list from the header's
pointer (offset 0x34), as the PCI specification lays it out.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..core import runfile

HEADER_BYTES = 64            # what an unprivileged reader sees of a function's config space
_STATUS = 0x06               # Status register; bit 4: the function has a capability list
_CAP_POINTER = 0x34          # offset of the first capability in the list
_PCIE_CAP_ID = 0x10          # capability ID of "PCI Express"
_DEVCTL = 8                  # Device Control, from the start of the PCI Express capability
_RELAXED_ORDERING_BIT = 1 << 4
_MAX_CAPS = 48               # (256 - 64) / 4: more links than the space holds is a loop


@dataclass(frozen=True)
class Hop:
    """One function on the path: its PCI address, whether it allows relaxed ordering (None: unknown) and why."""

    bdf: str
    enabled: bool | None
    note: str


def config_path(root: Path, pci_path: tuple[str, ...], depth: int) -> Path:
    """The config file of the function ``pci_path[depth]`` (pci_path starts with the root bus, 'pci0000:00')."""
    return Path(root, "devices", *pci_path[: depth + 1], "config")


def read_bit(data: bytes) -> tuple[bool | None, str]:
    """(the Enable Relaxed Ordering bit, or None where the bytes cannot say, and a note why) from config bytes."""
    if len(data) < HEADER_BYTES:
        return None, f"config space holds {len(data)} bytes, less than the {HEADER_BYTES}-byte header"
    if not data[_STATUS] & 0x10:
        return None, "the function lists no capabilities, so no PCI Express capability"
    pointer, seen = data[_CAP_POINTER] & 0xFC, 0
    while pointer:
        if pointer < HEADER_BYTES:  # capabilities live past the header; a pointer into it is no device's
            return None, f"a capability pointer ({pointer:#x}) points into the header: not a config space the kernel shows"
        if pointer + 2 > len(data):
            return None, (f"only {len(data)} bytes of config space readable (the capabilities lie beyond): "
                          "reading them needs root")
        if data[pointer] == _PCIE_CAP_ID:
            at = pointer + _DEVCTL
            if at + 2 > len(data):
                return None, (f"only {len(data)} bytes of config space readable (Device Control at {at:#x}): "
                              "reading it needs root")
            control = int.from_bytes(data[at:at + 2], "little")
            return bool(control & _RELAXED_ORDERING_BIT), f"Device Control {control:#06x}"
        seen += 1
        if seen > _MAX_CAPS:
            return None, "the capability list loops: not a config space the kernel shows"
        pointer = data[pointer + 1] & 0xFC
    return None, "no PCI Express capability in the list"


def read_hop(root: Path, pci_path: tuple[str, ...], depth: int) -> Hop:
    path = config_path(root, pci_path, depth)
    bdf = pci_path[depth]
    try:
        data = runfile.read_host_bytes(path)
    except FileNotFoundError:
        return Hop(bdf, None, f"{path} is missing")
    except runfile.Unreadable as exc:  # EACCES and the like: a fact unknown, not a fault of the tree
        return Hop(bdf, None, str(exc))
    enabled, note = read_bit(data)
    return Hop(bdf, enabled, note)


def path_hops(root: Path, pci_path: tuple[str, ...]) -> list[Hop]:
    """The NIC first, then each bridge up to the root port (the root bus itself, 'pci0000:00', has no config)."""
    return [read_hop(root, pci_path, depth) for depth in range(len(pci_path) - 1, 0, -1)
            if not pci_path[depth].startswith("pci")]


def allowed(hops: list[Hop]) -> bool | None:
    """The path allows relaxed ordering when every function on it does; off where one is off; else unknown."""
    if not hops:
        return None
    if any(h.enabled is False for h in hops):
        return False
    return True if all(h.enabled for h in hops) else None
