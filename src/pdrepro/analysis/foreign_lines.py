"""Another backend's start-up lines in a run's server logs.

The transport evidence reads each log through the run's own backend; a log that also holds RDMA lines of a backend
the run did not run (the logs are of more than one stack, or the record names the wrong backend) contradicts any
reading of that log as "no RDMA", so every other backend reads the logs too and says what RDMA it finds.
"""

from __future__ import annotations

from .. import backends
from ..backends import TransferBackend
from ..core import runfile
from ..core.roles import SERVER_ROLES
from ..rundir import RunDir


def other_backends_rdma(run: RunDir, backend: TransferBackend) -> tuple[list[str], dict[str, set[str]]]:
    """What the start-up lines of every other backend (another parser: a backend's variants read the same lines)
    say in the run's server logs: a log that also holds RDMA lines of a backend the run did not run contradicts any
    reading of it as "no RDMA" (the logs are of more than one stack, or the record names the wrong backend). Returns
    (the conflicts, per role the RDMA devices those lines name)."""
    others = [b for b in (backends.backend(n) for n in backends.names()) if type(b) is not type(backend)]
    conflicts: list[str] = []
    devices: dict[str, set[str]] = {}
    for role in SERVER_ROLES:
        for path in run.role_logs(role):
            for other in others:
                try:
                    reading = other.scan_latest_start(path.stem, runfile.lines(path))
                except OSError:
                    continue
                found = other.found_devices(reading)
                if reading.verdict != "rdma" and not found:
                    continue
                devices.setdefault(role, set()).update(found or ())
                conflicts.append(f"{path.name}: the run's backend is {backend.label}, but the log also holds "
                                 f"{other.label}'s start-up lines, which say RDMA ({reading.describe()})")
    return conflicts, devices
