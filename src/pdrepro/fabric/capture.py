"""Save the part of /sys the fabric checks read, so another machine can check it.

The copy keeps the kernel's shape: class entries stay relative symlinks into
the devices tree, so ``--sysfs-root COPY`` reads it exactly like /sys.
(Archiving /sys with tar does not work: sysfs files claim 4096 bytes and come
out padded with NULs.)
"""

from __future__ import annotations

import os
from pathlib import Path

from ..core import runfile
from ..core.safewrite import write_file

MODULES = ("nvidia_peermem", "nvidia", "ib_uverbs", "ib_core", "mlx5_core", "mlx5_ib", "rdma_rxe")
NVIDIA_VENDOR = "0x10de"


class _Copier:
    def __init__(self, src: Path, dst: Path):
        self.src, self.dst = Path(src), Path(dst)
        self.src_real = os.path.realpath(self.src)
        self.files = 0

    def link(self, rel: str) -> bool:
        path = self.src / rel
        if not path.is_symlink():
            return False
        out = self.dst / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        if not out.is_symlink():
            out.symlink_to(os.readlink(path))
        return True

    def copy(self, rel: str) -> None:
        path = self.src / rel
        try:
            text = runfile.read_host(path, errors="strict")
        except (OSError, UnicodeDecodeError):
            return  # unused GID slots and write-only attributes refuse reads; the reader treats them as absent
        real = os.path.relpath(os.path.realpath(path), self.src_real)
        if real.startswith(".."):
            return
        out = self.dst / real
        out.parent.mkdir(parents=True, exist_ok=True)
        write_file(out, text, "capture", self.dst)
        self.files += 1

    def copy_pci_path(self, device_link: str) -> None:
        """The config space of every PCI function from the device at DEVICE_LINK up to its root port, as bytes (the
        relaxed-ordering check reads it; a copy made without root holds the 64 bytes a user sees, and says so)."""
        real = os.path.relpath(os.path.realpath(self.src / device_link), self.src_real)
        parts = Path(real).parts
        if real.startswith("..") or len(parts) < 3 or parts[0] != "devices":
            return
        for depth in range(3, len(parts) + 1):
            rel = Path(*parts[:depth], "config")
            try:
                data = runfile.read_host_bytes(self.src / rel)
            except OSError:
                continue
            write_file(self.dst / rel, data, "capture", self.dst)
            self.files += 1

    def entries(self, rel: str) -> list[str]:
        path = self.src / rel
        return sorted(p.name for p in path.iterdir()) if path.is_dir() else []


def capture(src: Path, dst: Path) -> str:
    """Copy what doctor, ib-devices and baseline read from SRC (a /sys) to DST; returns a summary."""
    c = _Copier(src, dst)
    devices = c.entries("class/infiniband")
    for dev in devices:
        base = f"class/infiniband/{dev}"
        c.link(base)
        for name in ("fw_ver", "node_type", "node_desc"):
            c.copy(f"{base}/{name}")
        for port in c.entries(f"{base}/ports"):
            p = f"{base}/ports/{port}"
            for name in ("state", "phys_state", "rate", "link_layer"):
                c.copy(f"{p}/{name}")
            for i in c.entries(f"{p}/gids"):
                c.copy(f"{p}/gids/{i}")
                c.copy(f"{p}/gid_attrs/types/{i}")
                c.copy(f"{p}/gid_attrs/ndevs/{i}")
        if c.link(f"{base}/device"):
            c.copy(f"{base}/device/numa_node")
            c.copy_pci_path(f"{base}/device")
    for uverbs in c.entries("class/infiniband_verbs"):
        if c.link(f"class/infiniband_verbs/{uverbs}"):
            c.copy(f"class/infiniband_verbs/{uverbs}/ibdev")
    netdevs = c.entries("class/net")
    for ndev in netdevs:
        if c.link(f"class/net/{ndev}"):
            c.copy(f"class/net/{ndev}/mtu")
            c.copy(f"class/net/{ndev}/operstate")
    gpus = 0
    for bdf in c.entries("bus/pci/devices"):
        base = f"bus/pci/devices/{bdf}"
        try:
            vendor = runfile.read_host(Path(src) / base / "vendor").strip()
            klass = runfile.read_host(Path(src) / base / "class").strip()
        except OSError:
            continue
        if vendor == NVIDIA_VENDOR and klass.startswith("0x03"):
            c.link(base)
            for name in ("vendor", "class", "numa_node"):
                c.copy(f"{base}/{name}")
            gpus += 1
    modules = [m for m in MODULES if (Path(src) / "module" / m).is_dir()]
    for m in modules:
        (Path(dst) / "module" / m).mkdir(parents=True, exist_ok=True)
    (Path(dst) / "class" / "infiniband").mkdir(parents=True, exist_ok=True)
    return (f"{len(devices)} RDMA device(s), {len(netdevs)} net device(s), {gpus} GPU(s), "
            f"modules: {', '.join(modules) or 'none'}; {c.files} files")
