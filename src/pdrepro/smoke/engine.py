"""Starting the Mooncake Transfer Engine in an agent and proving its transport.

The engine logs through glog to fd 2; the transport it really installed is
read from those lines, so fd 2 is tapped before the engine starts.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from ..core.errors import UserError
from ..host.mooncake_engine import set_transport_env, start
from ..parsers.mooncake_log import TransportEvidence, detect, fallback_reason
from .settings import Settings


class StderrTap:
    """Copies everything written to fd 2 (where the engine's glog goes) into memory."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._orig = os.dup(2)
        r, w = os.pipe()
        os.dup2(w, 2)
        os.close(w)
        self._thread = threading.Thread(target=self._pump, args=(r,), daemon=True)
        self._thread.start()

    def _pump(self, r: int) -> None:
        pending = b""
        while True:
            chunk = os.read(r, 65536)
            if not chunk:
                return
            os.write(self._orig, chunk)
            pending += chunk
            *done, pending = pending.split(b"\n")
            self.lines.extend(x.decode(errors="replace") for x in done)

    def settle(self) -> list[str]:
        time.sleep(0.2)  # glog flushes from the engine's threads
        return list(self.lines)


def start_engine(settings: Settings, host_ip: str):
    """Initialise the engine with the environment the TCP transport needs."""
    set_transport_env(os.environ, settings.transport)
    tap = StderrTap()
    engine = start(host_ip, "rdma" if settings.transport == "rdma" else "tcp", "run the agent in the smoke image")
    evidence = detect(tap.settle(), force_tcp=os.environ.get("MC_FORCE_TCP") == "1")
    return engine, evidence


def require_transport(settings: Settings, evidence: TransportEvidence) -> None:
    if evidence.transport is None:
        raise UserError("cannot tell which transport the engine installed (no RDMA or TCP start-up line in its log)")
    if settings.transport == "rdma" and evidence.transport != "rdma":
        reason = fallback_reason(evidence, os.environ.get("MC_FORCE_TCP") == "1", Path("/dev/infiniband").is_dir())
        raise UserError(f"RDMA was requested but Mooncake fell back to {evidence.transport}: {reason}")
