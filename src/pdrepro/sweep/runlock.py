"""One sweep per run directory: an exclusive flock on RUN/.sweep.lock, held for the sweep's whole life.

The kernel drops an flock when its holder's last descriptor closes, so a sweep that crashed or was
killed (-9 included) leaves no stale lock behind; the file's text only tells a refused second sweep who
holds it (pid, host, start). A lock over NFS is as good as the server's flock emulation: run a sweep's
directory on a local or cluster file system that supports it.
"""

from __future__ import annotations

import fcntl
import os
import socket
import time
from pathlib import Path

from ..core.errors import UserError
from ..rundir import RunDir


class RunLock:
    def __init__(self, run_root: Path | str):
        self.path = RunDir(Path(run_root)).sweep_lock_file
        self._fd: int | None = None

    def __enter__(self) -> RunLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 512, 0).decode(errors="replace").strip() or "another process"
            os.close(fd)
            raise UserError(f"{self.path.parent}: a sweep already runs on this run directory ({holder}); wait "
                            "for it to end (or stop it), or pass another --out") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} on host {socket.gethostname()}, started "
                      f"{time.strftime('%Y-%m-%dT%H:%M:%S%z')}\n".encode(), 0)
        self._fd = fd
        return self

    def __exit__(self, *exc) -> None:
        if self._fd is not None:
            os.close(self._fd)  # releases the flock; the file stays, its text is stale but harmless
            self._fd = None
