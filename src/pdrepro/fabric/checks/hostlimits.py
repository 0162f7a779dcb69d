"""Host limits: the locked-memory limit RDMA registration needs."""

from __future__ import annotations

import resource

from ...core.units import MiB
from .. import dockerd, limits
from .base import PASS, WARN, Check, Context, Facts


def _fmt_limit(v: int) -> str:
    return "unlimited" if v == resource.RLIM_INFINITY else f"{v / MiB:g} MiB"


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
                     limits.raise_engine_limit(dockerd.find(ctx.proc_root)) + "; until then set MEMLOCK in the "
                     "deploy env (SMOKE_MEMLOCK for the smoke test) to a value within that limit")
    return Check("memlock", WARN,
                 detail + "; the server containers get MEMLOCK (default -1 = unlimited) from the Docker engine, which "
                 "can grant it, so only RDMA tools run directly in this shell are held to this limit",
                 "for ib_write_bw or transfer_engine_bench run outside the image: `ulimit -l unlimited` (raise the "
                 "hard limit in /etc/security/limits.conf); containers need `--ulimit memlock=-1` and CAP_IPC_LOCK")
