"""GPU checks: the GPUs themselves, their driver, GPU memory registration and GPU-NIC placement."""

from __future__ import annotations

from ...core import advice
from ...host import sysfs
from .. import affinity, driver
from .base import FAIL, PASS, WARN, Check, Context, Facts


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
    setting = (f"WITH_NVIDIA_PEERMEM={choice} ({origin})" if choice is not None
               else "WITH_NVIDIA_PEERMEM unset (defaults to peermem)")
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
        tp = ctx.scenario.parallel.tp(ctx.role)
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
    fix = (f"write the GPU-to-NIC map with `{advice.ib_devices('ib_devices.json')}` and pass it as "
           "--disaggregation-ib-device")
    if far:
        return Check("gpu-nic-affinity", WARN, summary + f"; {len(far)} GPU(s) have no NIC on their NUMA node "
                     "(or, for a virtual NIC, no known distance)", fix)
    return Check("gpu-nic-affinity", PASS, summary, fix)
