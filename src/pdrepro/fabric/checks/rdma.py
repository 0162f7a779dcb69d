"""RDMA checks: devices, port state, link layer, GIDs, MTU and the uverbs device nodes."""

from __future__ import annotations

import os
import re
import stat

from ...core.roce import FULL_MTU, payload_ceiling_GB_s, roce_mtu
from ...host import sysfs
from ...scenario.model import Scenario
from .. import gid
from .base import FAIL, PASS, WARN, Check, Context, Facts

__all__ = ["roce_mtu"]  # doctor's callers and tests read the derivation from here too


def check_devices(ctx: Context, f: Facts) -> Check:
    if not f.devices:
        return Check("rdma-devices", ctx.need, f"no RDMA device under {ctx.sysfs_root}/class/infiniband",
                     "GPU node: install the NIC driver and rdma-core, then `ibv_devices` must list the NICs; "
                     "laptop: `scripts/softroce.sh up` adds soft-RoCE (without it the smoke test runs over TCP)")
    parts = []
    for d in f.devices:
        where = d.pci_address or "virtual"
        parts.append(f"{d.name} (fw {d.fw_ver or '?'}, {where}, NUMA {d.numa_node})")
    return Check("rdma-devices", PASS, f"{len(f.devices)}: " + ", ".join(parts))


def check_ports(ctx: Context, f: Facts) -> Check:
    ports = [p for d in f.devices for p in d.ports]
    if not ports:
        return Check("port-state", ctx.need, "no RDMA ports", "see rdma-devices")
    bad = [f"{p.name} {p.state}/{p.phys_state}" for p in ports if not p.is_active]
    good = [p.name for p in ports if p.is_active]
    fix = ("bring the link up: check cable and switch port, `ip link set <netdev> up`, "
           "`ibstat` / `rdma link show` must say ACTIVE and LinkUp")
    if not good:
        return Check("port-state", FAIL if ctx.role or f.devices else WARN, "no port is ACTIVE/LinkUp: " + ", ".join(bad), fix)
    if bad:
        detail = (f"ACTIVE: {', '.join(good)}; not usable: {', '.join(bad)} "
                  "(the transfer engine skips them, so bandwidth drops)")
        return Check("port-state", _down_port_severity(ctx, len(good)), detail, fix)
    return Check("port-state", PASS, f"{len(good)} of {len(good)} port(s) ACTIVE/LinkUp")


def _down_port_severity(ctx: Context, active: int) -> str:
    """A GPU node with a port down fails, unless the ports still up already make up the
    scenario's whole link (then the down one is a NIC the run does not count on)."""
    if not ctx.role:
        return WARN
    link = ctx.scenario.link if ctx.scenario is not None else None
    return WARN if link is not None and active >= link.nics_per_node else FAIL


def check_link_layer(ctx: Context, f: Facts) -> Check:
    layers = sorted({p.link_layer for p in f.active_ports})
    if not layers:
        return Check("link-layer", ctx.need, "no active port", "see port-state")
    if len(layers) > 1:
        return Check("link-layer", WARN, f"mixed link layers {layers}",
                     "use one fabric for the KV transfer: set MC_TE_FILTERS / --disaggregation-ib-device to the NICs of one kind")
    kind = "RoCE (Ethernet)" if layers[0] == "Ethernet" else layers[0]
    return Check("link-layer", PASS, f"{layers[0]} on all active ports: {kind}")


def check_gids(ctx: Context, f: Facts) -> Check:
    ports = f.active_ports
    if not ports:
        return Check("gid", ctx.need, "no active port to pick a GID on", "see port-state")
    forced, forced_from = forced_gid_index(ctx)
    if forced is not None:
        return _check_forced_gid(ctx, ports, forced, forced_from)
    lines, bad = [], []
    for p in ports:
        choice = gid.pick(p)
        if choice is None:
            bad.append(p.name)
            lines.append(f"{p.name}: no usable GID (the engine skips this device)")
            continue
        where = f"{choice.ip or choice.gid} on {choice.ndev or 'no netdev'}"
        lines.append(f"{p.name}: index {choice.index} ({choice.gid_type}, {where}, {choice.klass})")
        if not choice.is_good:
            bad.append(p.name)
    detail = "Mooncake auto pick: " + "; ".join(lines)
    if bad:
        better = []
        for p in ports:
            ok = [c for c in gid.rank(p) if c.is_good]
            if ok:
                better.append(f"{p.name} index {ok[0].index}")
        fix = ("give each RDMA netdev an IPv4 address (`ip addr add <ip>/<len> dev <netdev>`) so a RoCE v2 GID "
               "with that address appears; GIDs on docker/cni/overlay netdevs, link-local or RoCE v1 ones do not "
               "route between nodes")
        if better:
            fix += "; or pin a good index with MC_GID_INDEX (" + ", ".join(better) + ")"
        return Check("gid", ctx.need, detail, fix)
    return Check("gid", PASS, detail)


def forced_gid_index(ctx: Context) -> tuple[int | None, str]:
    """The GID index the servers pin, as the engine reads it: MC_GID_INDEX if set,
    else NCCL_IB_GID_INDEX; a value outside 0..255 is ignored (auto pick)."""
    for key in ("MC_GID_INDEX", "NCCL_IB_GID_INDEX"):
        value, origin = ctx.server_env(key)
        if value is None:
            continue
        # The engine reads it with atoi: leading digits count, anything else is 0.
        m = re.match(r"\s*([+-]?\d+)", value)
        index = int(m.group(1)) if m else 0
        return (index, f"{key}={value} ({origin})") if 0 <= index < 256 else (None, f"{key}={value} ({origin})")
    return None, ""


def _check_forced_gid(ctx: Context, ports: list[sysfs.Port], index: int, origin: str) -> Check:
    """A pinned index replaces the auto pick on every device: it must be a usable GID on each port."""
    lines, bad = [], []
    for p in ports:
        entry = next((g for g in p.gids if g.index == index), None)
        klass = gid.classify(entry, p.link_layer) if entry is not None else None
        if entry is None or entry.is_null:
            bad.append(p.name)
            lines.append(f"{p.name}: index {index} is empty (the engine skips this device)")
            continue
        kind = gid.verbs_type(entry, p.link_layer) or "unreadable type"
        lines.append(f"{p.name}: index {index} ({kind}, {entry.ip or entry.gid} on {entry.ndev or 'no netdev'}, "
                     f"{klass or 'not RoCE v2/IB'})")
        if klass not in gid.GOOD_CLASSES:
            bad.append(p.name)
    detail = f"pinned by {origin}: " + "; ".join(lines)
    if bad:
        auto = [f"{p.name} index {c.index}" for p in ports for c in gid.rank(p)[:1] if c.is_good]
        fix = (f"the pinned index is not a routable RoCE v2/IB GID on {', '.join(bad)} (device GID tables differ); "
               "unset MC_GID_INDEX/NCCL_IB_GID_INDEX to let the engine pick per device"
               + (f" (it would pick {', '.join(auto)})" if auto else ""))
        return Check("gid", ctx.need, detail, fix)
    return Check("gid", PASS, detail)


def holds_published_run(scenario: Scenario | None) -> bool:
    """Whether SCENARIO reproduces a published run over RDMA: its reference section states the published
    per-length figures (reference.rows) and its KV must cross the fabric (transport rdma). Such a run was
    published at RoCE MTU 4096, so a smaller one caps it below the published figure before it starts."""
    return (scenario is not None and scenario.transport == "rdma" and scenario.reference is not None
            and bool(scenario.reference.rows))


def _used_devices(ctx: Context) -> set[str] | None:
    """The RDMA devices the servers' transfer engine may use: MC_TE_FILTERS' list where it is set
    (device names, comma separated), else None: every active port."""
    value, _ = ctx.server_env("MC_TE_FILTERS")
    names = {n for n in re.split(r"[,\s]+", value or "") if n}
    return names or None


def check_mtu(ctx: Context, f: Facts) -> Check:
    lines, small, short, unread = [], [], [], []
    used = _used_devices(ctx)
    for p in f.active_ports:
        if p.link_layer != "Ethernet":
            continue
        choice = gid.pick(p)
        ndev = (choice.ndev if choice else None) or (p.ndevs[0] if p.ndevs else None)
        mtu = sysfs.netdev_mtu(ctx.sysfs_root, ndev) if ndev else None
        if mtu is None:
            # An unreadable, empty or non-numeric MTU file (or no netdev at all) is not a measurement: the port's
            # RoCE MTU is unknown, which is never a pass.
            where = f"{ctx.sysfs_root}/class/net/{ndev}/mtu" if ndev else "no netdev under its GIDs"
            lines.append(f"{p.name}: netdev MTU not measured ({where} holds no MTU in bytes)")
            if used is None or p.device in used:
                unread.append(p.name)
            continue
        active = roce_mtu(mtu)
        lines.append(f"{p.name}: {ndev} MTU {mtu} -> RoCE MTU {active}")
        if active < FULL_MTU:
            small.append(ndev)
            if used is None or p.device in used:
                short.append(_short_port(p, ndev or "?", mtu, active))
    if not lines:
        return Check("mtu", PASS, "no RoCE port (MTU set by the InfiniBand subnet manager)") if f.active_ports else \
            Check("mtu", ctx.need, "no active port", "see port-state")
    fix = (f"set jumbo frames on the RDMA netdevs and on their switch ports: `ip link set dev {small[0]} mtu 9000` "
           f"and MTU 9000 (or more) on the switch, so the RoCE MTU becomes {FULL_MTU}") if small else ""
    required = bool(ctx.role) and holds_published_run(ctx.scenario)
    name = ctx.scenario.name if ctx.scenario is not None else "?"
    if short and required:
        return Check("mtu", FAIL, f"scenario {name} reproduces a run published at RoCE MTU {FULL_MTU}; "
                     + "; ".join(short + [line for line in lines if "not measured" in line]), fix)
    if unread:
        unread_fix = ("make each RDMA netdev's MTU readable: `cat /sys/class/net/<netdev>/mtu` must print a number "
                      f"of bytes (9000 for RoCE MTU {FULL_MTU}); with --sysfs-root, capture the copy again")
        if required:
            return Check("mtu", FAIL, f"scenario {name} reproduces a run published at RoCE MTU {FULL_MTU}, and the "
                         f"RoCE MTU of {', '.join(unread)} is not measured: " + "; ".join(lines), unread_fix)
        return Check("mtu", WARN, "; ".join(lines), unread_fix)
    if small:
        return Check("mtu", WARN, "; ".join(lines) + f" (Mooncake uses up to {FULL_MTU})", fix + " (or MC_MTU to match)")
    return Check("mtu", PASS, "; ".join(lines))


def _short_port(p: sysfs.Port, ndev: str, mtu: int, active: int) -> str:
    """One port below the full RoCE MTU, with what that costs it in payload (decimal GB/s)."""
    if not active:
        return f"{p.name}: {ndev} MTU {mtu} leaves no RoCE MTU at all"
    cost = ""
    if p.rate_Gb_s:
        rate = p.rate_Gb_s / 8
        cost = (f", payload ceiling {payload_ceiling_GB_s(rate, active):.1f} GB/s instead of "
                f"{payload_ceiling_GB_s(rate, FULL_MTU):.1f} of its {rate:g} GB/s")
    return f"{p.name}: {ndev} MTU {mtu} -> RoCE MTU {active}, below {FULL_MTU}{cost}"


def check_dev_infiniband(ctx: Context, f: Facts) -> Check:
    if not f.devices:
        return Check("dev-infiniband", ctx.need, f"no RDMA device, so no {ctx.dev_dir or '/dev/infiniband'}/uverbs*",
                     "see rdma-devices")
    if ctx.dev_dir is None:
        return Check("dev-infiniband", WARN, "not checked: --sysfs-root reads a copy, and /dev belongs to this host",
                     "run doctor on the node itself")
    problems, ok = [], []
    for d in f.devices:
        if d.uverbs is None:
            problems.append(f"{d.name}: no uverbs device in sysfs (ib_uverbs module not loaded?)")
            continue
        path = ctx.dev_dir / d.uverbs
        try:
            st = os.stat(path)
        except FileNotFoundError:
            problems.append(f"{path} missing")
            continue
        if not stat.S_ISCHR(st.st_mode):
            problems.append(f"{path} is not a character device")
        elif not os.access(path, os.R_OK | os.W_OK):
            problems.append(f"{path} not readable and writable by uid {os.getuid()}")
        else:
            ok.append(f"{d.name}={path}")
    if problems:
        return Check("dev-infiniband", FAIL if ctx.role else WARN, "; ".join(problems),
                     "without these the transfer engine silently finds no RDMA device and falls back to TCP: "
                     "`modprobe ib_uverbs`; in a container pass `--device /dev/infiniband` (the compose files do)")
    return Check("dev-infiniband", PASS, ", ".join(ok))
