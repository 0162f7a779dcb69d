"""One `pdrepro baseline` run's plan: which NIC pairs and tools, each port's line rate, the tools' command
lines, and where their outputs go. The runs themselves are in perftestruns.py (ib_write_bw per port) and
baseline.py (transfer_engine_bench, both sides)."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from ..core.errors import UserError
from ..core.safewrite import write_file
from ..host import sysfs
from ..rundir import RunDir
from ..scenario.sections import Thresholds
from . import affinity, gid

IB_WRITE_BW = "ib_write_bw"
TE_BENCH = "transfer_engine_bench"
INSTALL_PERFTEST = "install perftest (Debian/Ubuntu: `apt-get install perftest`; the runtime image has it)"
INSTALL_TE = ("transfer_engine_bench ships in the Mooncake wheel built with CUDA (the runtime image has it); "
              "run baseline inside that image with --network host and /dev/infiniband")


@dataclass
class BaselinePlan:
    """One `pdrepro baseline` run: which NIC pairs, which tools, how long."""
    peer: str
    role: str
    nics: list[str]
    remote_nics: list[str]
    gid_index: dict[str, int]
    out: Path | None = None
    duration: int = 10
    msg_bytes: int = 65536
    qps: int = 4
    base_port: int = 18515
    te_port: int = 16999
    segment_id: str | None = None
    use_vram: bool = True
    te_args: list[str] = field(default_factory=list)
    skip_perftest: bool = False
    skip_te: bool = False
    serve_seconds: int = 900
    line_rate_GB_s: float | None = None
    port_rates: dict[str, float] = field(default_factory=dict)   # local NIC -> its line rate, decimal GB/s
    min_port_fraction: float = Thresholds.model_fields["min_port_baseline_fraction"].default


def local_nics(root: Path, wanted: list[str] | None) -> tuple[list[str], dict[str, int], dict[str, float]]:
    """Active NICs (or the WANTED ones, checked), the GID index Mooncake would pick on each, and each one's
    line rate (its active port's sysfs rate, decimal GB/s)."""
    devices = {d.name: d for d in sysfs.read_rdma_devices(root)}
    active = [d.name for d in affinity.usable_nics(list(devices.values()))]
    if wanted:
        unknown = [n for n in wanted if n not in devices]
        if unknown:
            raise UserError(f"--nics: {', '.join(unknown)} not found under {root}/class/infiniband "
                            f"(have: {', '.join(devices) or 'none'})")
        down = [n for n in wanted if n not in active]
        if down:
            raise UserError(f"--nics: {', '.join(down)} has no ACTIVE port; bring it up or leave it out")
        active = list(wanted)
    if not active:
        raise UserError(f"no RDMA device with an ACTIVE port under {root}/class/infiniband; "
                        "run `pdrepro doctor` to see why (soft-RoCE: scripts/softroce.sh up)")
    gids, rates = {}, {}
    for name in active:
        port = next(p for p in devices[name].ports if p.is_active)
        choice = gid.pick(port)
        if choice is None:
            raise UserError(f"{name}: no usable RoCE v2/IB GID; give its netdev an IP address (`pdrepro doctor` shows the GIDs)")
        gids[name] = choice.index
        if port.rate_GB_s <= 0:
            raise UserError(f"{name}: sysfs gives no rate for port {port.number}, so no line rate to hold it against; "
                            "check the link (`pdrepro doctor`) or leave it out with --nics")
        rates[name] = port.rate_GB_s
    return active, gids, rates


def progress(msg: str) -> None:
    print(msg, flush=True)


def tcp_port(plan: BaselinePlan, phase: str, i: int) -> int:
    """The TCP port of pair I's ib_write_bw in PHASE: each run has its own, so the server side can start
    every listener at once and the client never meets one still busy with the previous run."""
    return plan.base_port + i + (len(plan.nics) if phase == "together" else 0)


def perftest_argv(plan: BaselinePlan, port: int, nic: str, client: bool) -> list[str]:
    argv = [IB_WRITE_BW, "-d", nic, "-x", str(plan.gid_index[nic]), "-p", str(port),
            "-s", str(plan.msg_bytes), "-q", str(plan.qps), "-D", str(plan.duration), "--report_gbits", "-F"]
    return argv + [plan.peer] if client else argv


def te_argv(plan: BaselinePlan, client: bool) -> list[str]:
    argv = [TE_BENCH, "--mode", "initiator" if client else "target", "--metadata_server", "P2PHANDSHAKE",
            "--protocol", "rdma", "--device_name", ",".join(plan.nics)]
    if plan.use_vram:
        # One buffer on every GPU ("cuda:N"). Without discovery the bench's NIC
        # table names only cuda:0, so buffers on other GPUs find no NIC; with it
        # each GPU gets its nearest NICs, as in SGLang, and te_env limits the
        # NICs to the measured ones.
        argv += ["--auto_discovery", "--use_vram", "--gpu_id", "-1"]
    if client:
        argv += ["--segment_id", plan.segment_id or f"{plan.peer}:{plan.te_port}", "--operation", "write",
                 "--duration", str(plan.duration), "--report_unit", "GB"]
    return argv + plan.te_args


def te_env(plan: BaselinePlan, **extra: str) -> dict[str, str]:
    """The bench's environment: discovery sees only the NICs being measured."""
    return dict(os.environ, MC_TE_FILTERS=",".join(plan.nics), **extra)


def _require(tool: str, how: str) -> None:
    if shutil.which(tool) is None:
        raise UserError(f"{tool} not found on PATH; {how}, or skip it with --skip-{'perftest' if tool == IB_WRITE_BW else 'te'}")


def require_tools(plan: BaselinePlan) -> None:
    """Both tools checked before either runs, so a missing one stops the run before any measuring."""
    if not plan.skip_perftest:
        _require(IB_WRITE_BW, INSTALL_PERFTEST)
    if not plan.skip_te:
        _require(TE_BENCH, INSTALL_TE)


def save_output(out: Path | None, name: str, text: str) -> None:
    if out is not None:
        folder = RunDir(out).baseline_outputs_dir
        folder.mkdir(parents=True, exist_ok=True)
        write_file(folder / name, text, "baseline", out)


