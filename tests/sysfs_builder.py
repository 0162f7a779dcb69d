"""Kernel-shaped fake sysfs trees for the fabric tests.

The layout follows the kernel's: devices live under ``devices/pci<dom>:<bus>/``
bridge chains, and ``class/infiniband/<dev>``, ``class/net/<ndev>``,
``class/infiniband_verbs/uverbsN`` and ``bus/pci/devices/<bdf>`` are relative
symlinks into that tree; file contents are what the kernel prints.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

NULL_GID = "0000:0000:0000:0000:0000:0000:0000:0000"
GID_SLOTS = 16  # real ports expose gid_tbl_len (often 255) slots; unused ones are null


def ipv4_gid(ip: str) -> str:
    a, b, c, d = (int(x) for x in ip.split("."))
    return f"0000:0000:0000:0000:0000:ffff:{a:02x}{b:02x}:{c:02x}{d:02x}"


def link_local_gid(mac_tail: int) -> str:
    return f"fe80:0000:0000:0000:0a88:66ff:fe{mac_tail:02x}:{mac_tail:04x}"


EXTENDED_ONLY = ("unicast_xmit_packets", "unicast_rcv_packets", "multicast_xmit_packets", "multicast_rcv_packets")
# What mlx5 and rxe list under ports/<p>/hw_counters (a subset of each).
MLX5_HW_COUNTERS = ("duplicate_request", "implied_nak_seq_err", "local_ack_timeout_err", "out_of_buffer",
                    "out_of_sequence", "packet_seq_err", "rnr_nak_retry_err", "roce_adp_retrans",
                    "rx_read_requests", "rx_write_requests")
RXE_HW_COUNTERS = ("ack_deferred", "completer_retry_err", "duplicate_request", "rcvd_pkts", "retry_exceeded_err",
                   "send_err", "sent_pkts")


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")


def _link(link: Path, target: Path) -> None:
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(os.path.relpath(target, link.parent))


@dataclass
class GidSpec:
    gid: str
    type: str            # 'RoCE v2' or 'IB/RoCE v1'
    ndev: str | None


def roce_gids(ndev: str, ip: str | None, tail: int, v2: bool = True, v1: bool = True) -> list[GidSpec]:
    """The GID table mlx5 fills for a netdev with an IPv4 address: link-local pair, then the IPv4 pair."""
    out = []
    ll = link_local_gid(tail)
    if v1:
        out.append(GidSpec(ll, "IB/RoCE v1", ndev))
    if v2:
        out.append(GidSpec(ll, "RoCE v2", ndev))
    if ip:
        if v1:
            out.append(GidSpec(ipv4_gid(ip), "IB/RoCE v1", ndev))
        if v2:
            out.append(GidSpec(ipv4_gid(ip), "RoCE v2", ndev))
    return out


@dataclass
class FakeSysfs:
    root: Path
    _uverbs: int = field(default=0)

    def __post_init__(self) -> None:
        self.root = Path(self.root)
        (self.root / "class" / "infiniband").mkdir(parents=True, exist_ok=True)
        (self.root / "class" / "net").mkdir(parents=True, exist_ok=True)
        (self.root / "module").mkdir(parents=True, exist_ok=True)

    # PCI -----------------------------------------------------------------
    def pci_device(self, chain: list[str], numa_node: int) -> Path:
        """Create a PCI function at devices/<chain...>; every bridge on the way gets its numa_node."""
        path = self.root / "devices"
        for part in chain:
            path = path / part
            if not part.startswith("pci"):
                _write(path / "numa_node", str(numa_node))
        _link(self.root / "bus" / "pci" / "devices" / chain[-1], path)
        return path

    def gpu(self, chain: list[str], numa_node: int) -> Path:
        path = self.pci_device(chain, numa_node)
        _write(path / "vendor", "0x10de")
        _write(path / "class", "0x030200")
        return path

    # RDMA ----------------------------------------------------------------
    def nic(self, name: str, chain: list[str] | None, numa_node: int, ndev: str, *,
            gids: list[GidSpec], rate: str = "400 Gb/sec (4X NDR)", state: str = "4: ACTIVE",
            phys_state: str = "5: LinkUp", link_layer: str = "Ethernet", mtu: int = 9000,
            fw_ver: str = "28.39.1002", ports: int = 1, counters: int | None = 0,
            extended_counters: bool = True) -> Path:
        if chain is None:  # a software device (rxe): no PCI parent
            dev_base = self.root / "devices" / "virtual"
            net_dir = dev_base / "net" / ndev
        else:
            dev_base = self.pci_device(chain, numa_node)
            _write(dev_base / "vendor", "0x15b3")
            net_dir = dev_base / "net" / ndev
        ib_dir = dev_base / "infiniband" / name
        _write(ib_dir / "fw_ver", fw_ver)
        _write(ib_dir / "node_type", "1: CA")
        if chain is not None:
            _link(ib_dir / "device", dev_base)
        for p in range(1, ports + 1):
            port = ib_dir / "ports" / str(p)
            _write(port / "state", state)
            _write(port / "phys_state", phys_state)
            _write(port / "rate", rate)
            _write(port / "link_layer", link_layer)
            if counters is not None:  # rxe has no performance counters, only hw_counters
                # The kernel adds the unicast/multicast packet counters only with the 64-bit ones.
                for counter in ("port_xmit_data", "port_rcv_data", "port_xmit_packets", "port_rcv_packets", "symbol_error",
                                *(EXTENDED_ONLY if extended_counters else ())):
                    _write(port / "counters" / counter, str(counters))
            for counter in (MLX5_HW_COUNTERS if chain is not None else RXE_HW_COUNTERS):
                _write(port / "hw_counters" / counter, "0")
            for i in range(GID_SLOTS):
                spec = gids[i] if i < len(gids) else None
                _write(port / "gids" / str(i), spec.gid if spec else NULL_GID)
                (port / "gid_attrs" / "types").mkdir(parents=True, exist_ok=True)
                (port / "gid_attrs" / "ndevs").mkdir(parents=True, exist_ok=True)
                if spec:  # unused slots exist but reading them fails (EINVAL): leave no file
                    _write(port / "gid_attrs" / "types" / str(i), spec.type)
                    if spec.ndev:
                        _write(port / "gid_attrs" / "ndevs" / str(i), spec.ndev)
        _link(self.root / "class" / "infiniband" / name, ib_dir)
        uverbs = f"uverbs{self._uverbs}"
        self._uverbs += 1
        verbs_dir = dev_base / "infiniband_verbs" / uverbs
        _write(verbs_dir / "ibdev", name)
        _link(self.root / "class" / "infiniband_verbs" / uverbs, verbs_dir)
        if not (self.root / "class" / "net" / ndev).exists():
            self.netdev(ndev, mtu, net_dir)
        return ib_dir

    def traffic(self, name: str, *, sent: int = 0, received: int = 0, port: int = 1, width: int = 64,
                hw: dict[str, int] | None = None) -> None:
        """Count bytes through a port as the kernel shows them: in 4-byte words, a 32-bit
        (legacy) counter wrapping past 2^32 - 1 as the brief's wrap tests need."""
        base = self.root / "class" / "infiniband" / name / "ports" / str(port)
        for counter, nbytes in (("port_xmit_data", sent), ("port_rcv_data", received)):
            path = base / "counters" / counter
            value = int(path.read_text()) + nbytes // 4
            path.write_text(f"{value % 2**width if width < 64 else value}\n")
        for counter, rise in (hw or {}).items():
            path = base / "hw_counters" / counter
            path.write_text(f"{int(path.read_text()) + rise}\n")

    def set_counter(self, name: str, counter: str, value: int | str, port: int = 1) -> None:
        _write(self.root / "class" / "infiniband" / name / "ports" / str(port) / "counters" / counter, str(value))

    def netdev(self, name: str, mtu: int, where: Path | None = None) -> Path:
        where = where or self.root / "devices" / "virtual" / "net" / name
        if not (where / "mtu").exists():
            _write(where / "mtu", str(mtu))
            _write(where / "operstate", "up")
        link = self.root / "class" / "net" / name
        if not link.is_symlink():
            _link(link, where)
        return where

    def module(self, name: str) -> None:
        _write(self.root / "module" / name / "refcnt", "0")


# PCI config space ----------------------------------------------------------

PCIE_CAP_AT = 0x40  # where the fixtures put the PCI Express capability (real devices: 0x40..0xa0 and so on)


def pci_config(relaxed: bool, *, size: int = 256, cap_at: int = PCIE_CAP_AT) -> bytes:
    """A function's config space as root reads it: a header whose Status says it has capabilities, a power
    management capability at 0x40 linking to the PCI Express one (or the PCI Express one at ``cap_at``),
    whose Device Control holds Enable Relaxed Ordering (bit 4) as asked, beside Max Payload 256 B. ``size``:
    the bytes the reader may see (64 for a user other than root)."""
    data = bytearray(4096)
    data[0:2] = (0x15B3).to_bytes(2, "little")
    data[0x06] = 0x10            # Status: capability list
    data[0x34] = cap_at
    data[cap_at] = 0x10          # PCI Express
    control = 0x2000 | 0x0020 | (0x0010 if relaxed else 0)
    data[cap_at + 8:cap_at + 10] = control.to_bytes(2, "little")
    return bytes(data[:size])


def write_config(fs: FakeSysfs, chain: list[str], data: bytes) -> Path:
    """Write ``data`` as the config file of the function at the end of CHAIN (a bridge or an endpoint)."""
    path = fs.root / "devices" / Path(*chain) / "config"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def relaxed_path(fs: FakeSysfs, chain: list[str], *, off_at: int | None = None, size: int = 256) -> None:
    """Config space for every function of CHAIN (root bus excluded): relaxed ordering on, except at chain
    index ``off_at``; ``size`` as in ``pci_config``."""
    for depth in range(1, len(chain)):
        write_config(fs, chain[:depth + 1], pci_config(depth != off_at, size=size))


# Scenarios the tests use ----------------------------------------------------

def switch_chain(switch: int, slot: int) -> list[str]:
    """PCI path of endpoint SLOT behind PCIe switch SWITCH (each switch on its own root bus)."""
    rb = 0x15 + 0x20 * switch
    return [f"pci0000:{rb:02x}", f"0000:{rb:02x}:01.0", f"0000:{rb + 1:02x}:00.0",
            f"0000:{rb + 2:02x}:{slot:02x}.0", f"0000:{rb + 3 + slot:02x}:00.0"]


def gpu_bus_id(switch: int, slot: int) -> str:
    """The same endpoint as nvidia-smi prints it."""
    return "0000" + switch_chain(switch, slot)[-1].upper()


def h20_node(root: Path, *, nics: int = 4, rate: str = "400 Gb/sec (4X NDR)", mtu: int = 9000,
             down: tuple[str, ...] = (), gid_mode: str = "v2", peermem: bool = True,
             ip_base: str = "192.168", link_layer: str = "Ethernet", extended_counters: bool = True,
             relaxed: bool | None = True) -> FakeSysfs:
    """A healthy H20 node: 4 PCIe switches (2 per NUMA node), each with 2 GPUs and one CX-7. ``relaxed``: each
    NIC's PCIe path has config space as root reads it, with relaxed ordering on (True) or off at the NIC (False);
    None: no config files (a tree captured without them)."""
    fs = FakeSysfs(root)
    for s in range(4):
        numa = s // 2
        fs.gpu(switch_chain(s, 0), numa)
        fs.gpu(switch_chain(s, 1), numa)
        if s >= nics:
            continue
        name, ndev = f"mlx5_{s}", f"ens{10 + s}np0"
        ip = f"{ip_base}.{100 + s}.11"
        if gid_mode == "v2":
            gids = roce_gids(ndev, ip, s)
        elif gid_mode == "v1-only":
            gids = roce_gids(ndev, ip, s, v2=False)
        elif gid_mode == "no-ip":
            gids = roce_gids(ndev, None, s)
        elif gid_mode == "docker-only":
            gids = roce_gids("docker0", "172.17.0.1", s)
        else:
            raise ValueError(gid_mode)
        fs.nic(name, switch_chain(s, 2), numa, ndev, gids=gids, rate=rate, mtu=mtu,
               link_layer=link_layer, extended_counters=extended_counters,
               state="1: DOWN" if name in down else "4: ACTIVE",
               phys_state="3: Disabled" if name in down else "5: LinkUp")
        if relaxed is not None:
            relaxed_path(fs, switch_chain(s, 2), off_at=None if relaxed else len(switch_chain(s, 2)) - 1)
    if gid_mode == "docker-only":
        fs.netdev("docker0", 1500)
    if peermem:
        fs.module("nvidia_peermem")
    fs.module("mlx5_core")
    return fs


def rxe_node(root: Path, netdev: str = "eth0", ip: str = "192.168.1.20", mtu: int = 1500) -> FakeSysfs:
    """A laptop with soft-RoCE on its Ethernet: rxe0, no PCI parent, no GPU."""
    fs = FakeSysfs(root)
    eth = fs.pci_device(["pci0000:00", "0000:00:1f.6"], -1)
    fs.netdev(netdev, mtu, eth / "net" / netdev)
    fs.nic("rxe0", None, -1, netdev, gids=roce_gids(netdev, ip, 1), rate="10 Gb/sec (4X SDR)",
           fw_ver="0.0.0", mtu=mtu, counters=None)
    fs.module("rdma_rxe")
    return fs
