"""RDMA devices, ports, GIDs and net devices as the kernel shows them in sysfs.

Everything is read from a root shaped like ``/sys`` so that a captured copy of
a node (or a test tree) can be checked exactly like the live system.
"""

from __future__ import annotations

import ipaddress
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..core import runfile
from ..core.roce import roce_mtu
from ..rundir.counters import parse_rate

DEFAULT_ROOT = Path("/sys")

_NULL_GID = "0000:0000:0000:0000:0000:0000:0000:0000"


def _read(path: Path) -> str | None:
    """File content stripped, or None where the kernel has no value.

    Unused GID-attribute slots answer reads with EINVAL; treat that like absent. A FIFO or a huge file where
    an attribute belongs is no value but a tree that is not the kernel's: the capped reader refuses it (exit 2).
    """
    try:
        return runfile.read_host(path, errors="strict").strip()
    except (OSError, UnicodeDecodeError):
        return None


@dataclass(frozen=True)
class Gid:
    index: int
    gid: str                 # as sysfs prints it: eight groups of four hex digits
    type: str | None         # 'RoCE v2', 'IB/RoCE v1', or None when unreadable
    ndev: str | None         # net device the GID belongs to ('' / None: none)

    @property
    def is_null(self) -> bool:
        return self.gid == _NULL_GID

    @property
    def address(self) -> ipaddress.IPv6Address | None:
        try:
            return ipaddress.IPv6Address(self.gid)
        except ValueError:
            return None

    @property
    def ipv4(self) -> ipaddress.IPv4Address | None:
        """The IPv4 address of an IPv4-mapped GID (::ffff:a.b.c.d)."""
        addr = self.address
        return addr.ipv4_mapped if addr is not None else None

    @property
    def ip(self) -> str | None:
        """The address a peer reaches this GID at, as people write it."""
        if self.ipv4 is not None:
            return str(self.ipv4)
        addr = self.address
        return str(addr) if addr is not None and not self.is_null else None


@dataclass(frozen=True)
class Port:
    device: str
    number: int
    state: str               # 'ACTIVE', 'DOWN', ... (the word after "N: ")
    phys_state: str          # 'LinkUp', 'Disabled', 'Polling', ...
    rate_Gb_s: float | None  # from "400 Gb/sec (4X NDR)"
    rate_text: str
    link_layer: str          # 'Ethernet' or 'InfiniBand'
    gids: tuple[Gid, ...] = ()

    @property
    def name(self) -> str:
        return f"{self.device}/{self.number}"

    @property
    def is_active(self) -> bool:
        return self.state == "ACTIVE" and self.phys_state == "LinkUp"

    @property
    def rate_GB_s(self) -> float:
        return (self.rate_Gb_s or 0.0) / 8

    @property
    def ndevs(self) -> list[str]:
        seen: list[str] = []
        for gid in self.gids:
            if gid.ndev and gid.ndev not in seen:
                seen.append(gid.ndev)
        return seen


@dataclass(frozen=True)
class RdmaDevice:
    name: str
    fw_ver: str | None
    pci_path: tuple[str, ...]   # PCI components from the root bus down, () for virtual devices
    numa_node: int              # -1 where the kernel does not know (virtual, single-node)
    ports: tuple[Port, ...] = field(default_factory=tuple)
    uverbs: str | None = None   # the uverbsN char device that opens it

    @property
    def pci_address(self) -> str | None:
        return self.pci_path[-1] if self.pci_path else None

    @property
    def is_virtual(self) -> bool:
        return not self.pci_path


def _state_word(text: str | None) -> str:
    """'4: ACTIVE' -> 'ACTIVE'."""
    if not text:
        return "UNKNOWN"
    return text.split(":", 1)[-1].strip()


def pci_path_of(target: Path) -> tuple[str, ...]:
    """PCI components of a resolved device path: ('pci0000:00', '0000:00:01.0', ...)."""
    parts = target.parts
    for i, part in enumerate(parts):
        if part.startswith("pci") and ":" in part:
            return tuple(p for p in parts[i:]
                         if p.startswith("pci") or re.match(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$", p))
    return ()


def _device_dir(dev_dir: Path) -> Path | None:
    link = dev_dir / "device"
    if not link.exists():
        return None
    return Path(os.path.realpath(link))


def _read_numa(device_dir: Path | None) -> int:
    if device_dir is None:
        return -1
    try:
        return int(_read(device_dir / "numa_node") or -1)
    except ValueError:
        return -1


def _read_gids(port_dir: Path) -> tuple[Gid, ...]:
    gids_dir = port_dir / "gids"
    if not gids_dir.is_dir():
        return ()
    out = []
    for entry in sorted(gids_dir.iterdir(), key=lambda p: int(p.name) if p.name.isdigit() else -1):
        if not entry.name.isdigit():
            continue
        i = entry.name
        out.append(Gid(
            index=int(i),
            gid=_read(entry) or _NULL_GID,
            type=_read(port_dir / "gid_attrs" / "types" / i),
            ndev=_read(port_dir / "gid_attrs" / "ndevs" / i) or None,
        ))
    return tuple(out)


def _read_port(device: str, port_dir: Path) -> Port:
    rate_text = _read(port_dir / "rate") or ""
    return Port(
        device=device,
        number=int(port_dir.name),
        state=_state_word(_read(port_dir / "state")),
        phys_state=_state_word(_read(port_dir / "phys_state")),
        rate_Gb_s=parse_rate(rate_text),
        rate_text=rate_text,
        link_layer=_read(port_dir / "link_layer") or "unknown",
        gids=_read_gids(port_dir),
    )


def _uverbs_map(root: Path) -> dict[str, str]:
    """RDMA device name -> uverbsN, from class/infiniband_verbs/uverbsN/ibdev."""
    verbs = root / "class" / "infiniband_verbs"
    out: dict[str, str] = {}
    if verbs.is_dir():
        for entry in sorted(verbs.iterdir()):
            ibdev = _read(entry / "ibdev")
            if ibdev:
                out[ibdev] = entry.name
    return out


def read_rdma_devices(root: Path = DEFAULT_ROOT) -> list[RdmaDevice]:
    """All RDMA devices under ROOT/class/infiniband, sorted by name."""
    base = Path(root) / "class" / "infiniband"
    if not base.is_dir():
        return []
    uverbs = _uverbs_map(Path(root))
    devices = []
    for dev_dir in sorted(base.iterdir(), key=lambda p: p.name):
        pci_dir = _device_dir(dev_dir)
        ports_dir = dev_dir / "ports"
        ports = []
        if ports_dir.is_dir():
            for port_dir in sorted(ports_dir.iterdir(), key=lambda p: int(p.name) if p.name.isdigit() else 0):
                if port_dir.name.isdigit():
                    ports.append(_read_port(dev_dir.name, port_dir))
        devices.append(RdmaDevice(
            name=dev_dir.name,
            fw_ver=_read(dev_dir / "fw_ver"),
            pci_path=pci_path_of(pci_dir) if pci_dir is not None else (),
            numa_node=_read_numa(pci_dir),
            ports=tuple(ports),
            uverbs=uverbs.get(dev_dir.name),
        ))
    return devices


def _roce_mtu_facts(root: Path, port_dir: Path) -> dict:
    """The netdev a RoCE port's GIDs sit on (the first named, by index), its MTU and the RoCE MTU that
    MTU gives (None where a fact is unreadable, or no IB MTU fits)."""
    ndevs = [g.ndev for g in _read_gids(port_dir) if g.ndev]
    ndev = ndevs[0] if ndevs else None
    mtu = netdev_mtu(root, ndev) if ndev else None
    active = roce_mtu(mtu) if mtu is not None else 0
    return {"netdev": ndev, "netdev_mtu": mtu, "roce_mtu": active or None}


def netdev_mtu(root: Path, ndev: str) -> int | None:
    if "/" in ndev or ndev in (".", ".."):  # a netdev name is one path component; anything else is not one
        return None
    text = _read(Path(root) / "class" / "net" / ndev / "mtu")
    # The kernel prints the MTU as ASCII decimal digits; anything else ("jumbo", "", "9_000", "+9000", other
    # scripts' digits, which int() would take) is no MTU it wrote, so not a measurement.
    return int(text) if text is not None and re.fullmatch(r"[0-9]{1,9}", text) else None


def module_loaded(root: Path, name: str) -> bool:
    return (Path(root) / "module" / name).is_dir()


def pci_device(root: Path, address: str) -> tuple[tuple[str, ...], int] | None:
    """(PCI path, NUMA node) of a PCI function such as '0000:0f:00.0', from ROOT/bus/pci/devices."""
    link = Path(root) / "bus" / "pci" / "devices" / address
    if not link.exists():
        return None
    target = Path(os.path.realpath(link))
    return pci_path_of(target), _read_numa(target)


def normalize_bus_id(bus_id: str) -> str:
    """nvidia-smi's '00000000:0F:00.0' -> sysfs's '0000:0f:00.0'."""
    bus_id = bus_id.strip().lower()
    domain, rest = bus_id.split(":", 1) if bus_id.count(":") == 2 else ("0000", bus_id)
    return f"{int(domain, 16):04x}:{rest}"


def nic_inventory(ib_dir: Path) -> dict:
    """Firmware, board and the raw port words (rate, state, link layer) of every device under IB_DIR
    (ROOT/class/infiniband), as sysfs prints them: the record of what a run's host had. A RoCE port adds
    its netdev, that netdev's MTU and the RoCE MTU the kernel derives from it (sysfs has no active_mtu
    file), so a report can state the payload ceiling the run had."""
    found: dict = {}
    if not ib_dir.is_dir():
        return found
    for dev in sorted(ib_dir.iterdir()):
        entry: dict = {"fw_ver": _read(dev / "fw_ver"), "board_id": _read(dev / "board_id"), "ports": {}}
        ports = dev / "ports"
        if ports.is_dir():
            for port in sorted(ports.iterdir()):
                entry["ports"][port.name] = {
                    "rate": _read(port / "rate"),
                    "state": _read(port / "state"),
                    "link_layer": _read(port / "link_layer"),
                }
                if entry["ports"][port.name]["link_layer"] == "Ethernet":
                    entry["ports"][port.name].update(_roce_mtu_facts(ib_dir.parent.parent, port))
        found[dev.name] = entry
    return found
