"""The checks behind ``pdrepro doctor``: one node, before the expensive run.

Each check says what it found and, when it is not a pass, how to fix it. With
a role (prefill/decode) the node is held to what the GPU benchmark needs;
without one (a laptop preparing the smoke test) missing GPUs and RDMA are
warnings, because the smoke test runs without them.
"""

from __future__ import annotations

import errno
import json
import os
import re
import resource
import shutil
import socket
import stat
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..scenario import Scenario
from . import affinity, driver, gid, limits, nvidia, sysfs
from .tools import ToolFailed, ToolMissing

PASS, WARN, FAIL = "pass", "warn", "fail"

# RoCE carries this much header per packet; the kernel's RoCE MTU is the
# largest IB MTU that fits in (netdev MTU - overhead).
ROCE_OVERHEAD = 96
IB_MTUS = (256, 512, 1024, 2048, 4096)
MOONCAKE_MTU = 4096
# What the NVIDIA container toolkit installs for `docker run --gpus` / compose device requests.
NVIDIA_HOOK = "nvidia-container-runtime-hook"

# Ports the stack binds on a node, by role: the router runs next to the
# decode server (compose/decode.yaml), the bootstrap server inside prefill.
PORTS = {
    "prefill": [(30000, "prefill server HTTP"), (8998, "disaggregation bootstrap")],
    "decode": [(30001, "decode server HTTP"), (8000, "router")],
}


@dataclass(frozen=True)
class Check:
    name: str
    status: str
    detail: str
    fix: str = ""


@dataclass
class Context:
    sysfs_root: Path = sysfs.DEFAULT_ROOT
    role: str | None = None
    scenario: Scenario | None = None
    model: Path | None = None
    dataset: Path | None = None
    advertise_ip: str | None = None
    env: dict = field(default_factory=lambda: dict(os.environ))
    dev_dir: Path | None = Path("/dev/infiniband")  # None: reading a sysfs copy, not this host
    memlock: tuple[int, int] | None = None
    proc_root: Path = Path("/proc")  # where the local Docker engine's limits are read
    ports: list[tuple[int, str]] | None = None

    def server_env(self, key: str) -> tuple[str | None, str]:
        """A server setting and where it comes from: the scenario's launch env wins over this shell's."""
        launch = getattr(self.scenario, "launch", None) if self.scenario is not None else None
        if launch is not None and key in launch.env:
            return str(launch.env[key]), f"scenario {self.scenario.name}"
        if key in self.env:
            return self.env[key], "environment"
        return None, ""

    def wanted_ports(self) -> list[tuple[int, str]]:
        if self.ports is not None:
            return self.ports
        launch = getattr(self.scenario, "launch", None) if self.scenario is not None else None
        if launch is None:
            return PORTS[self.role] if self.role else PORTS["prefill"] + PORTS["decode"]
        p = launch.ports
        by_role = {
            "prefill": [(p.prefill, "prefill server HTTP"), (p.bootstrap, "disaggregation bootstrap")],
            "decode": [(p.decode, "decode server HTTP"), (p.router, "router")],
        }
        chosen = by_role[self.role] if self.role else by_role["prefill"] + by_role["decode"]
        return [(port, what) for port, what in chosen if port]

    @property
    def need(self) -> str:
        """Severity of something the GPU benchmark needs and the smoke test does not."""
        return FAIL if self.role else WARN


@dataclass
class Facts:
    """What the checks read once and share."""

    devices: list[sysfs.RdmaDevice]
    gpus: list[nvidia.Gpu] | None = None
    gpu_error: str | None = None
    driver: str | None = None
    driver_error: str | None = None
    topo: nvidia.Topology | None = None

    @property
    def active_ports(self) -> list[sysfs.Port]:
        return [p for d in self.devices for p in d.ports if p.is_active]


def gather(ctx: Context) -> Facts:
    facts = Facts(devices=sysfs.read_rdma_devices(ctx.sysfs_root))
    try:
        facts.gpus = nvidia.query_gpus()
    except ToolMissing:
        facts.gpu_error = "nvidia-smi not found on PATH"
    except (ToolFailed, ValueError) as exc:
        facts.gpu_error = str(exc)
    if facts.gpus:
        try:
            facts.topo = nvidia.query_topology()
        except (ToolMissing, ToolFailed, ValueError):
            facts.topo = None  # sysfs still gives PCI paths
        facts.driver, facts.driver_error = driver.query_driver_version()
    return facts


# RDMA ------------------------------------------------------------------------

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


def needed_line_rate_GB_s(scenario: Scenario) -> tuple[float, str] | None:
    """The line rate a node needs for the scenario's bandwidth thresholds to be reachable, and why.

    The demand is the highest bandwidth the thresholds ask for (peak, per length, or the peak
    utilization of the scenario's own link). No RoCE transfer reaches 100 % of line rate: the
    demand is divided by the peak utilization the scenario's reference run reached, when it
    states one."""
    t, link = scenario.thresholds, scenario.link
    asks = []
    if t.min_peak_bandwidth_GB_s is not None:
        asks.append((t.min_peak_bandwidth_GB_s, f"a {t.min_peak_bandwidth_GB_s:g} GB/s peak"))
    if t.min_bandwidth_GB_s:
        L, bw = max(t.min_bandwidth_GB_s.items(), key=lambda kv: kv[1])
        asks.append((bw, f"{bw:g} GB/s at length {L}"))
    if t.min_peak_utilization_pct is not None and link is not None:
        bw = t.min_peak_utilization_pct / 100 * link.line_rate_GB_s
        asks.append((bw, f"{t.min_peak_utilization_pct:g} % of its {link.line_rate_GB_s:g} GB/s link ({bw:.1f} GB/s)"))
    if not asks:
        return None
    demand, what = max(asks, key=lambda a: a[0])
    reached = (scenario.reference.headline.get("peak_utilization_pct") if scenario.reference else None) or 100.0
    need = demand / (reached / 100)
    why = f"scenario {scenario.name} needs {what}"
    if reached < 100:
        why += f"; at the {reached:g} % of line rate its reference run reached, that takes {need:.1f} GB/s of line rate"
    return need, why


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


def line_rate_GB_s(f: Facts) -> float:
    return sum((p.rate_GB_s for p in f.active_ports), 0.0)


def check_line_rate(ctx: Context, f: Facts) -> Check:
    ports = f.active_ports
    if not ports:
        return Check("line-rate", ctx.need, "no active port: line rate 0 GB/s", "see port-state")
    total_Gb = sum(p.rate_Gb_s or 0 for p in ports)
    rates = sorted({p.rate_Gb_s or 0.0 for p in ports})
    each = (f"{len(ports)} x {rates[0]:g}" if len(rates) == 1 else " + ".join(f"{p.rate_Gb_s or 0:g}" for p in ports))
    detail = (f"{each} Gb/s = {total_Gb:g} Gb/s = {_GBs(total_Gb / 8)} GB/s (decimal), "
              "the denominator of KV-transfer utilization on this node")
    needed = needed_line_rate_GB_s(ctx.scenario) if ctx.role and ctx.scenario is not None else None
    if needed is not None and total_Gb / 8 < needed[0]:
        lost = [f"{p.name} {p.state}" for d in f.devices for p in d.ports if not p.is_active]
        link = ctx.scenario.link
        full = link.nic_rate_Gb_s if link is not None else max(p.rate_Gb_s or 0 for p in ports)
        lost += [f"{p.name} at {p.rate_text or 'an unreadable rate'}" for p in ports if (p.rate_Gb_s or 0) < full]
        short = "; ports short of it: " + ", ".join(lost) if lost else ""
        return Check("line-rate", FAIL, detail + f"; {needed[1]}, more than this node's {_GBs(total_Gb / 8)} GB/s"
                     + short, "bring every RDMA port up at its full rate (cable, switch port, `ibstat`), or judge "
                     "the run with a scenario whose link and thresholds match this fabric")
    if len(rates) > 1:
        return Check("line-rate", WARN, detail + f"; ports differ ({', '.join(p.rate_text for p in ports)})",
                     "a port below its nominal rate usually means a bad cable or a mis-negotiated switch port")
    if ctx.scenario is not None and ctx.scenario.link is not None:
        want = ctx.scenario.link.line_rate_GB_s
        if abs(want - total_Gb / 8) > 0.01 * want:
            link = ctx.scenario.link
            return Check("line-rate", WARN,
                         detail + f"; scenario {ctx.scenario.name} assumes {link.nics_per_node} x {link.nic_rate_Gb_s:g} Gb/s "
                         f"= {want:.1f} GB/s", "the report divides by the scenario's link: copy the scenario and set its "
                         "`link` to this node's NICs, or compare against the published figures knowing the fabric differs")
    return Check("line-rate", PASS, detail)


def _GBs(x: float) -> str:
    return f"{x:.1f}" if x >= 10 else f"{x:.2f}"


def roce_mtu(netdev_mtu: int) -> int:
    fits = [m for m in IB_MTUS if m <= netdev_mtu - ROCE_OVERHEAD]
    return fits[-1] if fits else 0


def check_mtu(ctx: Context, f: Facts) -> Check:
    lines, small = [], []
    for p in f.active_ports:
        if p.link_layer != "Ethernet":
            continue
        choice = gid.pick(p)
        ndev = (choice.ndev if choice else None) or (p.ndevs[0] if p.ndevs else None)
        mtu = sysfs.netdev_mtu(ctx.sysfs_root, ndev) if ndev else None
        if mtu is None:
            lines.append(f"{p.name}: netdev MTU unknown")
            continue
        active = roce_mtu(mtu)
        lines.append(f"{p.name}: {ndev} MTU {mtu} -> RoCE MTU {active}")
        if active < MOONCAKE_MTU:
            small.append(ndev)
    if not lines:
        return Check("mtu", PASS, "no RoCE port (MTU set by the InfiniBand subnet manager)") if f.active_ports else \
            Check("mtu", ctx.need, "no active port", "see port-state")
    if small:
        return Check("mtu", WARN, "; ".join(lines) + f" (Mooncake uses up to {MOONCAKE_MTU})",
                     f"set jumbo frames on the RDMA netdevs and their switch ports: "
                     f"`ip link set dev {small[0]} mtu 9000` (or MC_MTU to match)")
    return Check("mtu", PASS, "; ".join(lines))


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


def _fmt_limit(v: int) -> str:
    return "unlimited" if v == resource.RLIM_INFINITY else f"{v / 2**20:g} MiB"


def check_memlock(ctx: Context, f: Facts) -> Check:
    soft, hard = ctx.memlock or resource.getrlimit(resource.RLIMIT_MEMLOCK)
    detail = f"this shell: memlock soft {_fmt_limit(soft)}, hard {_fmt_limit(hard)}"
    if soft == resource.RLIM_INFINITY:
        return Check("memlock", PASS, detail)
    # The servers run in containers, whose limit comes from the engine, not from this shell.
    cap = limits.engine_memlock_cap(ctx.proc_root)
    if cap is not None:
        return Check("memlock", ctx.need,
                     detail + f"; the Docker engine cannot raise a container's limit (rootless, or without "
                     f"CAP_SYS_RESOURCE), so no container gets more than its own {_fmt_limit(int(cap))} "
                     "(RDMA registration pins every KV buffer)",
                     "raise the engine's limit (systemd: `systemctl edit docker`, add `LimitMEMLOCK=infinity` under "
                     "[Service], restart docker) or run it with CAP_SYS_RESOURCE; until then set MEMLOCK in the "
                     "deploy env (SMOKE_MEMLOCK for the smoke test) to a value within that limit")
    return Check("memlock", WARN,
                 detail + "; the server containers get MEMLOCK (default -1 = unlimited) from the Docker engine, which "
                 "can grant it, so only RDMA tools run directly in this shell are held to this limit",
                 "for ib_write_bw or transfer_engine_bench run outside the image: `ulimit -l unlimited` (raise the "
                 "hard limit in /etc/security/limits.conf); containers need `--ulimit memlock=-1` and CAP_IPC_LOCK")


def check_gpu_registration(ctx: Context, f: Facts) -> Check:
    peermem = sysfs.module_loaded(ctx.sysfs_root, "nvidia_peermem")
    choice, origin = ctx.server_env("WITH_NVIDIA_PEERMEM")
    if choice == "0":
        return Check("gpu-memory-registration", PASS,
                     f"WITH_NVIDIA_PEERMEM=0 ({origin}): GPU memory registered through DMA-BUF"
                     + (" (nvidia_peermem is loaded too)" if peermem else ""))
    if peermem:
        return Check("gpu-memory-registration", PASS, "nvidia_peermem module loaded (Mooncake's default path)")
    if not f.gpus and not ctx.role:
        return Check("gpu-memory-registration", PASS, "no GPU: only host memory is registered")
    setting = f"WITH_NVIDIA_PEERMEM={choice} ({origin})" if choice is not None else "WITH_NVIDIA_PEERMEM unset (defaults to peermem)"
    return Check("gpu-memory-registration", ctx.need,
                 f"nvidia_peermem not loaded and {setting}: registering GPU memory will fail",
                 "`modprobe nvidia-peermem`, or set WITH_NVIDIA_PEERMEM=0 for the servers (scenario launch.env) to use "
                 "DMA-BUF (needs the open GPU kernel module and a kernel with dma-buf RDMA support)")


def check_gpus(ctx: Context, f: Facts) -> Check:
    if f.gpus is None:
        return Check("gpus", ctx.need, f.gpu_error or "nvidia-smi gave no answer",
                     "install the NVIDIA driver (nvidia-smi must list the GPUs); not needed for the smoke test")
    if not f.gpus:
        return Check("gpus", ctx.need, "nvidia-smi lists no GPU", "check the driver: `nvidia-smi -L`")
    models = sorted({g.name for g in f.gpus})
    detail = f"{len(f.gpus)} x {', '.join(models)}"
    if ctx.scenario is not None and ctx.role:
        tp = ctx.scenario.parallel.prefill_tp if ctx.role == "prefill" else ctx.scenario.parallel.decode_tp
        if len(f.gpus) < tp:
            return Check("gpus", FAIL, detail + f"; the {ctx.role} server of {ctx.scenario.name} needs TP {tp}",
                         "run on a node with enough GPUs or use a scenario with a smaller TP")
    return Check("gpus", PASS, detail)


def check_driver(ctx: Context, f: Facts) -> Check:
    """The driver branch the GPU image's CUDA needs (GPU_MIN_DRIVER)."""
    need = driver.Requirement.from_pins()
    if f.driver is None:
        if not f.gpus and not ctx.role:
            return Check("nvidia-driver", PASS, "no GPU: the smoke test needs no NVIDIA driver")
        return Check("nvidia-driver", ctx.need, f"driver version unknown: {f.driver_error or f.gpu_error}",
                     f"install the NVIDIA driver R{need.minimum} or newer and check that nvidia-smi runs")
    reason = need.too_old(f.driver)
    if reason:
        return Check("nvidia-driver", ctx.need, reason, need.fix)
    return Check("nvidia-driver", PASS, f"driver {f.driver} (R{need.minimum} or newer, as CUDA {need.cuda_major} needs)")


def check_affinity(ctx: Context, f: Facts) -> Check:
    nics = affinity.usable_nics(f.devices)
    if not f.gpus or not nics:
        return Check("gpu-nic-affinity", PASS if not ctx.role else WARN,
                     "not checked: needs both GPUs and an active RDMA device",
                     "" if not ctx.role else "see gpus and rdma-devices")
    placements = affinity.place(f.gpus, nics, f.topo, ctx.sysfs_root)
    far = [p for p in placements if p.link in ("SYS", affinity.UNKNOWN)]
    summary = ", ".join(f"GPU{p.gpu}->{p.nic} {p.link}" for p in placements)
    fix = ("write the GPU-to-NIC map with `pdrepro ib-devices --out ib_devices.json` and pass it as "
           "--disaggregation-ib-device")
    if far:
        return Check("gpu-nic-affinity", WARN, summary + f"; {len(far)} GPU(s) have no NIC on their NUMA node "
                     "(or, for a virtual NIC, no known distance)", fix)
    return Check("gpu-nic-affinity", PASS, summary, fix)


# Host software ---------------------------------------------------------------

def check_docker(ctx: Context, f: Facts) -> list[Check]:
    try:
        import docker  # the SDK talks to DOCKER_HOST or the local socket
        client = docker.from_env(timeout=5)
        info = client.info()
    except Exception as exc:  # the SDK raises many kinds; all mean "not reachable"
        reason = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        return [Check("docker", FAIL, f"Docker engine not reachable: {reason}",
                      "install Docker Engine and start it (`systemctl start docker`); the user needs access to "
                      "/var/run/docker.sock (or set DOCKER_HOST)")]
    out = [Check("docker", PASS, f"Docker {info.get('ServerVersion', '?')}, {info.get('Containers', 0)} containers")]
    runtimes = sorted((info.get("Runtimes") or {}).keys())
    # The compose files ask for GPUs as device requests (driver: nvidia), which
    # the engine serves through the toolkit's prestart hook; a registered
    # `nvidia` runtime is the other way to get them.
    hook = shutil.which(NVIDIA_HOOK)
    if "nvidia" in runtimes:
        out.append(Check("nvidia-runtime", PASS, f"runtimes: {', '.join(runtimes)}"))
    elif hook:
        out.append(Check("nvidia-runtime", PASS, f"{hook} present: the engine serves GPU device requests "
                         f"(runtimes: {', '.join(runtimes)})"))
    else:
        out.append(Check("nvidia-runtime", ctx.need if (ctx.role or f.gpus) else PASS,
                         f"no nvidia runtime (runtimes: {', '.join(runtimes) or 'none'}) and no {NVIDIA_HOOK}"
                         + ("" if (ctx.role or f.gpus) else "; not needed without GPUs"),
                         "install nvidia-container-toolkit, then `nvidia-ctk runtime configure --runtime=docker` "
                         "and restart dockerd" if (ctx.role or f.gpus) else ""))
    return out


def check_model(ctx: Context, f: Facts) -> list[Check]:
    if ctx.model is None:
        if ctx.role:
            return [Check("model", WARN, "not checked", "pass --model DIR (the directory mounted into the servers)")]
        return []
    cfg = ctx.model / "config.json"
    if not ctx.model.is_dir():
        return [Check("model", FAIL, f"{ctx.model} is not a directory", "download the model weights there, or fix the path")]
    try:
        config = json.loads(cfg.read_text())
    except FileNotFoundError:
        return [Check("model", FAIL, f"{cfg} missing", "point --model at the Hugging Face model directory (it holds config.json)")]
    except (OSError, ValueError) as exc:
        return [Check("model", FAIL, f"{cfg} unreadable: {exc}", "re-download the model's config.json")]
    detail = f"{ctx.model}: {config.get('architectures', ['?'])[0]}, {config.get('num_hidden_layers', '?')} layers"
    weights = list(ctx.model.glob("*.safetensors"))
    detail += f", {len(weights)} safetensors files"
    if ctx.scenario is not None and ctx.scenario.model.geometry is not None:
        want = ctx.scenario.model.geometry
        diffs = [f"{k} {config.get(k)} != {getattr(want, k)}" for k in
                 ("num_hidden_layers", "num_key_value_heads", "head_dim")
                 if getattr(want, k) is not None and config.get(k) is not None and config.get(k) != getattr(want, k)]
        if diffs:
            return [Check("model", WARN, detail + f"; differs from scenario {ctx.scenario.name}: " + ", ".join(diffs),
                          "KV sizes in the report follow the scenario: use the scenario's model or a scenario for this one")]
    if not weights:
        return [Check("model", WARN, detail, "the weights (*.safetensors) are missing: finish the download")]
    return [Check("model", PASS, detail)]


def check_dataset(ctx: Context, f: Facts) -> list[Check]:
    if ctx.dataset is None:
        if ctx.role == "prefill":
            return [Check("dataset", WARN, "not checked", "pass --dataset FILE (the ShareGPT JSON the bench client reads)")]
        return []
    fix = ("the bench client downloads the dataset from a hub when the path is not a file, which fails offline: "
           "download ShareGPT_V3_unfiltered_cleaned_split.json and mount it")
    if not ctx.dataset.is_file():
        return [Check("dataset", FAIL, f"{ctx.dataset} is not a file", fix)]
    with ctx.dataset.open("rb") as fh:
        head = fh.read(64).lstrip()
    if not head.startswith(b"["):
        return [Check("dataset", FAIL, f"{ctx.dataset} does not start like a JSON list", fix)]
    return [Check("dataset", PASS, f"{ctx.dataset}: {ctx.dataset.stat().st_size / 1e6:.1f} MB")]


def port_in_use(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("0.0.0.0", port))
        except OSError as exc:
            return exc.errno == errno.EADDRINUSE
    return False


def answers_health(port: int, timeout: float = 2.0) -> bool:
    """Whether what holds PORT is an HTTP server answering GET /health with 2xx,
    as the servers, the router and the bootstrap server of a running stack do."""
    import requests

    try:
        return requests.get(f"http://127.0.0.1:{port}/health", timeout=timeout).ok
    except requests.RequestException:
        return False


def check_ports_free(ctx: Context, f: Facts) -> Check:
    wanted = ctx.wanted_ports()
    held = [(p, what) for p, what in wanted if port_in_use(p)]
    # `make repro` runs doctor with the stack up: its own servers hold these ports.
    running = [(p, what) for p, what in held if answers_health(p)]
    busy = [f"{p} ({what})" for p, what in held if (p, what) not in running]
    free = [str(p) for p, what in wanted if (p, what) not in held]
    if busy:
        return Check("ports", FAIL, "in use: " + ", ".join(busy),
                     "stop what holds them (`ss -ltnp 'sport = :PORT'` names it) or change the ports in compose/example.env")
    parts = [f"free: {', '.join(free)}"] if free else []
    if running:
        parts.append("held by a running server answering /health (the stack is up): "
                     + ", ".join(f"{p} ({what})" for p, what in running))
    return Check("ports", PASS, "; ".join(parts) + " (the transfer engine picks its RPC port from the free ones in "
                 "MC_MIN_RPC_PORT..MC_MAX_RPC_PORT, 15000-17000 by default)")


def _local(ip: str) -> bool:
    fam = socket.AF_INET6 if ":" in ip else socket.AF_INET
    with socket.socket(fam, socket.SOCK_DGRAM) as s:
        try:
            s.bind((ip, 0))
        except OSError:
            return False
    return True


def check_advertise_ip(ctx: Context, f: Facts) -> Check:
    ip = ctx.advertise_ip or ctx.env.get("SGLANG_HOST_IP") or ctx.env.get("HOST_IP")
    rdma_ips = {}
    for p in f.active_ports:
        for g in p.gids:
            if g.ipv4 is not None:
                rdma_ips.setdefault(str(g.ipv4), f"{g.ndev} ({p.device})")
    example = next(iter(rdma_ips), None)
    if not ip:
        return Check("advertise-ip", WARN if ctx.role else PASS,
                     "SGLANG_HOST_IP / HOST_IP not set: SGLang guesses by probing NICs",
                     f"set SGLANG_HOST_IP to this node's RDMA-netdev address{f' (e.g. {example})' if example else ''}, "
                     "or pass --advertise-ip to check one" if ctx.role else "")
    if ip in rdma_ips:
        return Check("advertise-ip", PASS, f"{ip} is on {rdma_ips[ip]}")
    if ctx.dev_dir is None:  # a copied tree: this host's addresses say nothing about that node
        return Check("advertise-ip", WARN, f"{ip} is on none of the copied node's RDMA netdevs",
                     "advertise an RDMA-netdev address" + (f" such as {example}" if example else ""))
    if _local(ip):
        return Check("advertise-ip", WARN, f"{ip} is local but not on an RDMA netdev",
                     "the peer then bootstraps over a non-RDMA network; advertise an RDMA-netdev address"
                     + (f" such as {example}" if example else ""))
    return Check("advertise-ip", FAIL, f"{ip} is not an address of this host",
                 "use one of this node's addresses" + (f", preferably an RDMA one such as {example}" if example else ""))


def run_checks(ctx: Context, facts: Facts | None = None) -> tuple[list[Check], float]:
    f = facts or gather(ctx)
    checks = [
        check_devices(ctx, f), check_ports(ctx, f), check_link_layer(ctx, f), check_gids(ctx, f),
        check_line_rate(ctx, f), check_mtu(ctx, f), check_dev_infiniband(ctx, f), check_memlock(ctx, f),
        check_gpu_registration(ctx, f), check_gpus(ctx, f), check_driver(ctx, f), check_affinity(ctx, f),
        *check_docker(ctx, f), *check_model(ctx, f), *check_dataset(ctx, f),
        check_ports_free(ctx, f), check_advertise_ip(ctx, f),
    ]
    return checks, round(line_rate_GB_s(f), 3)


def to_json(checks: list[Check], line_rate: float) -> dict:
    return {"checks": [asdict(c) for c in checks], "line_rate_GB_s": line_rate}
