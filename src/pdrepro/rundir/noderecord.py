"""A node's record: what ``pdrepro doctor --out FILE`` found on one node, kept under ``RUN/nodes/<role>.json``.

The pair check (``pdrepro doctor --pair``) holds the prefill node's record against the decode node's before a
launch, and ``pdrepro diagnose`` reads both from the run to place NICs and GPUs and to name the PCIe and MTU
facts of each end. Every field is a fact as read on the node, or None where the node could not read it: a
None is "unknown", never a default, and a reader never guesses one. Units are in the field names (bytes,
Gb/s, GB/s decimal).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from ..core import runfile
from ..core.errors import UserError
from ..core.strictmodel import Record, load

FORMAT = "pdrepro-node-record/1"
NODES_DIR = "nodes"  # RUN/nodes/<role>.json


class CheckRecord(Record):
    """One row of doctor's table, as ``--json`` prints it."""

    name: str = Field(description="the check's name (rdma-devices, mtu, gid, relaxed-ordering, ...)")
    status: Literal["pass", "warn", "fail"] = Field(description="its verdict")
    detail: str = Field(description="what it found")
    fix: str = Field(default="", description="how to fix it, where it is not a pass")


class PathHop(Record):
    """One PCI function between a NIC and its root port (the NIC itself first)."""

    bdf: str = Field(description="its PCI address, as sysfs names it (0000:17:00.0)")
    relaxed_ordering: bool | None = Field(description="its Device Control register's Enable Relaxed Ordering bit; "
                                                       "None: not readable (config space past 64 bytes needs root)")
    note: str = Field(description="where the answer came from, or why there is none")


class PortRecord(Record):
    """One RDMA port of a NIC."""

    port: int = Field(description="port number on the device (1 for most NICs)")
    active: bool = Field(description="state ACTIVE and physical state LinkUp")
    link_layer: str = Field(description="Ethernet (RoCE) or InfiniBand, as sysfs says")
    rate_Gb_s: float | None = Field(description="the port's rate, Gb/s (None: unreadable)")
    netdev: str | None = Field(description="the net device its chosen GID sits on (RoCE)")
    netdev_mtu_bytes: int | None = Field(description="that net device's MTU, bytes")
    active_mtu_bytes: int | None = Field(description="the RoCE MTU that netdev MTU gives (256..4096 bytes); for "
                                                     "InfiniBand None (set by the subnet manager)")
    gid_index: int | None = Field(description="the GID index the transfer engine uses on this port: the pinned one "
                                              "(MC_GID_INDEX / NCCL_IB_GID_INDEX) or its own pick")
    gid_type: str | None = Field(description="that GID's type (RoCE v2, IB/RoCE v1, IB)")
    gid_address: str | None = Field(description="that GID as an address (the IPv4 of an IPv4-mapped GID)")
    gid_reachable: bool | None = Field(description="whether that GID routes between nodes (RoCE v2 with an "
                                                   "address on a physical netdev, or IB); None: no GID")


class NicRecord(Record):
    """One RDMA device: where it sits on PCIe, whether its path allows relaxed ordering, its ports."""

    device: str = Field(description="RDMA device name (mlx5_0)")
    pci_address: str | None = Field(description="its PCI address; None for a software device (rxe)")
    pci_path: list[str] = Field(description="PCI functions from the root bus down to the NIC")
    numa_node: int = Field(description="its NUMA node (-1: the kernel does not say)")
    firmware: str | None = Field(description="fw_ver as sysfs prints it")
    relaxed_ordering: bool | None = Field(description="True: every function from the NIC up to the root port allows "
                                                      "relaxed ordering; False: one does not; None: unknown")
    relaxed_ordering_path: list[PathHop] = Field(description="each function's answer, the NIC first")
    ports: list[PortRecord] = Field(description="its ports")


class GpuRecord(Record):
    index: int = Field(description="nvidia-smi's index")
    name: str = Field(description="the GPU's model name")
    bus_id: str = Field(description="its PCI address as nvidia-smi prints it")
    nic: str | None = Field(description="the NIC doctor places it with (nearest by PCIe/NUMA)")
    nic_link: str | None = Field(description="the distance to that NIC (PIX, PXB, PHB, NODE, SYS, unknown)")


class Software(Record):
    """What the servers run: versions and the CUDA flavour of their wheels, and where that was read."""

    launcher: Literal["compose", "host"] | None = Field(
        description="compose: the servers run in IMAGE (its digest is what must match); host: the packages of a "
                    "Python on the node; None: not said")
    read_from: str | None = Field(description="the image or Python the versions were read from")
    image: str | None = Field(description="the image name given (compose)")
    image_digest: str | None = Field(description="that image's content digest on this node's engine (sha256:...)")
    sglang_version: str | None = Field(description="the sglang distribution's version")
    mooncake_version: str | None = Field(description="the Mooncake transfer engine distribution's version")
    mooncake_distribution: str | None = Field(description="which Mooncake distribution (its name carries the flavour)")
    torch_version: str | None = Field(description="torch's version (its local part, +cu130, names the CUDA build)")
    wheel_flavour: Literal["cu12", "cu13"] | None = Field(
        description="the CUDA major the wheels are built for, from the Mooncake distribution's name or torch's local "
                    "version; None: not read")


class NodeRecord(Record):
    """RUN/nodes/<role>.json: one node as doctor found it, written whatever its verdict."""

    format: Literal["pdrepro-node-record/1"] = Field(description="this file's format and version")
    role: Literal["prefill", "decode"] | None = Field(description="the server this node runs (doctor --role)")
    hostname: str | None = Field(description="the node's host name")
    recorded_at: str = Field(description="when doctor ran, UTC ISO 8601")
    sysfs_root: str = Field(description="the sysfs tree read (/sys, or a captured copy)")
    verdict: Literal["pass", "fail"] = Field(description="fail when any check failed")
    checks: list[CheckRecord] = Field(description="doctor's rows, in its order")
    line_rate_GB_s: float = Field(description="the active ports' line rate together, decimal GB/s")
    nics: list[NicRecord] = Field(description="every RDMA device, by name")
    gpus: list[GpuRecord] | None = Field(description="the GPUs with their nearest NIC; None: nvidia-smi gave none")
    nvidia_peermem_loaded: bool = Field(description="whether the nvidia_peermem module is loaded")
    with_nvidia_peermem: str | None = Field(description="WITH_NVIDIA_PEERMEM as the servers get it (0: DMA-BUF)")
    relaxed_ordering_knob: str | None = Field(
        description="MC_IB_PCI_RELAXED_ORDERING as the servers get it (None: unset, which the pinned Mooncake reads as "
                    "0, off; 1 on, 2 auto)")
    software: Software = Field(description="what the servers run")


def record_path(run: Path, role: str) -> Path:
    """Where a run keeps the record of its ROLE node."""
    return Path(run) / NODES_DIR / f"{role}.json"


def read(path: Path) -> NodeRecord:
    """The record at PATH, or one line (exit 2) naming it and what is wrong."""
    try:
        data = runfile.read_json(path)
    except FileNotFoundError:
        raise UserError(f"{path}: no such node record; write it on that node with "
                        "`pdrepro doctor --role ROLE --out FILE`") from None
    except ValueError as exc:
        raise UserError(f"{path}: not JSON ({str(exc).splitlines()[0][:120]}); write it again with "
                        "`pdrepro doctor --role ROLE --out FILE`") from None
    return load(NodeRecord, data, str(path), fix="write it again with `pdrepro doctor --role ROLE --out FILE`")
