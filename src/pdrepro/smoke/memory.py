"""The memory an agent holds: the KV-sized buffer, what it may pin, what it peaked at."""

from __future__ import annotations

import ctypes
import mmap
import resource

from ..core import runfile
from ..core.errors import UserError


class Buffer:
    """Page-aligned anonymous memory with a stable address for the engine."""

    def __init__(self, nbytes: int) -> None:
        self.nbytes = nbytes
        self.mem = mmap.mmap(-1, nbytes)
        self.view = memoryview(self.mem)
        self.addr = ctypes.addressof(ctypes.c_char.from_buffer(self.mem))

    def zero(self, nbytes: int) -> None:
        ctypes.memset(self.addr, 0, nbytes)


def memory_peak() -> dict:
    """Peak memory of this container (cgroup) or, failing that, of this process."""
    for path in ("/sys/fs/cgroup/memory.peak", "/sys/fs/cgroup/memory/memory.max_usage_in_bytes"):
        try:
            return {"bytes": int(runfile.read_host(path).split()[0]), "source": path}
        except (OSError, ValueError, IndexError):
            pass
    for line in runfile.read_host("/proc/self/status", runfile.PROC).splitlines():
        if line.startswith("VmHWM:"):
            return {"bytes": int(line.split()[1]) * 1024, "source": "VmHWM"}
    return {"bytes": None, "source": None}


def memlock_limit() -> int | None:
    soft, _ = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    return None if soft == resource.RLIM_INFINITY else soft


def require_memlock(transport: str, need: int) -> None:
    """Stops before registering when RDMA could not pin ``need`` bytes (RDMA pins registered memory; TCP does not)."""
    limit = memlock_limit()
    if transport == "rdma" and limit is not None and limit < need:
        raise UserError(
            f"memlock limit is {limit} B but RDMA must pin {need} B; raise SMOKE_MEMLOCK (bytes, -1 = unlimited) "
            "or use fewer/smaller --prompt-lens"
        )
