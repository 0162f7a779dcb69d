"""A node's record (rundir.noderecord.NodeRecord) from what doctor read on it: its rows, its NICs with their
ports, GIDs, MTUs and PCIe paths, its GPUs with their nearest NIC, and the software its servers run."""

from __future__ import annotations

import dataclasses
import socket
from collections.abc import Collection
from datetime import datetime, timezone

from ..core.roce import roce_mtu
from ..host import pcie, sysfs
from ..rundir.noderecord import FORMAT, CheckRecord, GpuRecord, NicRecord, NodeRecord, PathHop, PortRecord, Software
from . import affinity, doctor, gid
from .checks.base import Check, Context, Facts
from .checks.ordering import KNOB, nic_paths
from .checks.rdma import forced_gid_index


def _port(ctx: Context, p: sysfs.Port) -> PortRecord:
    """The port with the GID the engine uses on it: the pinned index where one is pinned, else its own pick."""
    forced, _ = forced_gid_index(ctx)
    index = kind = address = ndev = None
    reachable: bool | None = None
    if forced is not None:
        index, reachable = forced, False  # pinned to an empty slot: the engine skips the device
        entry = next((g for g in p.gids if g.index == forced and not g.is_null), None)
        if entry is not None:
            kind, address, ndev = gid.verbs_type(entry, p.link_layer), entry.ip, entry.ndev
            reachable = gid.classify(entry, p.link_layer) in gid.GOOD_CLASSES
    else:
        choice = gid.pick(p)
        if choice is not None:
            index, kind, address, ndev, reachable = choice.index, choice.gid_type, choice.ip, choice.ndev, choice.is_good
    ndev = ndev or (p.ndevs[0] if p.ndevs else None)
    mtu = sysfs.netdev_mtu(ctx.sysfs_root, ndev) if ndev and p.link_layer == "Ethernet" else None
    active = (roce_mtu(mtu) or None) if mtu is not None else None
    return PortRecord(port=p.number, active=p.is_active, link_layer=p.link_layer, rate_Gb_s=p.rate_Gb_s, netdev=ndev,
                      netdev_mtu_bytes=mtu, active_mtu_bytes=active, gid_index=index, gid_type=kind,
                      gid_address=address, gid_reachable=reachable)


def _nics(ctx: Context, f: Facts) -> list[NicRecord]:
    paths = f.relaxed_paths if f.relaxed_paths is not None else nic_paths(ctx, f)
    out = []
    for d in f.devices:
        hops = paths.get(d.name, [])
        out.append(NicRecord(
            device=d.name, pci_address=d.pci_address, pci_path=list(d.pci_path), numa_node=d.numa_node,
            firmware=d.fw_ver, relaxed_ordering=pcie.allowed(hops),
            relaxed_ordering_path=[PathHop(bdf=h.bdf, relaxed_ordering=h.enabled, note=h.note) for h in hops],
            ports=[_port(ctx, p) for p in d.ports]))
    return out


def _gpus(ctx: Context, f: Facts) -> list[GpuRecord] | None:
    if not f.gpus:
        return None
    nics = affinity.usable_nics(f.devices)
    placed = {p.gpu: p for p in affinity.place(f.gpus, nics, f.topo, ctx.sysfs_root)} if nics else {}
    return [GpuRecord(index=g.index, name=g.name, bus_id=g.bus_id,
                      nic=placed[g.index].nic if g.index in placed else None,
                      nic_link=placed[g.index].link if g.index in placed else None) for g in f.gpus]


def build(ctx: Context, f: Facts, checks: list[Check], line_rate: float, software: Software) -> NodeRecord:
    peermem, _ = ctx.server_env("WITH_NVIDIA_PEERMEM")
    knob, _ = ctx.server_env(KNOB)
    return NodeRecord(
        format=FORMAT, role=ctx.role, hostname=socket.gethostname() or None,  # type: ignore[arg-type]
        recorded_at=datetime.now(timezone.utc).isoformat(timespec="seconds"), sysfs_root=str(ctx.sysfs_root),
        verdict="fail" if any(c.status == "fail" for c in checks) else "pass",
        checks=[CheckRecord(name=c.name, status=c.status, detail=c.detail, fix=c.fix) for c in checks],  # type: ignore[arg-type]
        line_rate_GB_s=line_rate, nics=_nics(ctx, f), gpus=_gpus(ctx, f),
        nvidia_peermem_loaded=sysfs.module_loaded(ctx.sysfs_root, "nvidia_peermem"), with_nvidia_peermem=peermem,
        relaxed_ordering_knob=knob, software=software)


def of_role(ctx: Context, f: Facts, software: Software, gpus: Collection[int] | None = None) -> NodeRecord:
    """What `doctor --role ROLE --out FILE` writes, from facts read once: its checks run and the record built, whatever
    the verdict. ``gpus``: the nvidia-smi indices this role was given on a box that runs both roles (the one-box
    launch), so each role's record names its own GPUs and their NICs; None: every GPU is the node's."""
    if gpus is not None and f.gpus is not None:
        wanted = set(gpus)
        f = dataclasses.replace(f, gpus=[g for g in f.gpus if g.index in wanted])
    checks, line_rate = doctor.run_checks(ctx, f)
    return build(ctx, f, checks, line_rate, software)
