"""The smoke's NIXL arm: the same KV-sized bytes through NIXL's UCX backend, host memory, TCP only.

Each side holds a NIXL agent with its buffer registered as host memory (DRAM). The target hands its
agent metadata out through the control endpoint; the initiator loads it and READs KV-sized prefixes of
the target's buffer, block by block as the Mooncake way does. UCX is restricted to TCP before NIXL
loads it: two containers on one host could otherwise meet through shared memory or CMA and measure
no network at all. UCX names the transports of every endpoint's lanes at log level info; it writes
them to a file in the run's raw folder (kept as evidence), read by the same parser as a real NIXL
server's log.
"""

from __future__ import annotations

import base64
import ctypes
import os
import sys
import time
from pathlib import Path

from ..core import runfile
from ..core.errors import UserError
from ..parsers.nixl_log import NixlTransport, scan, scan_latest_start
from ..scenario.smokeplan import blocks
from .memory import Buffer

# What UCX is told before NIXL loads it: TCP only, and its lane lines logged (they prove the transport).
UCX_ENV = {"UCX_TLS": "tcp", "UCX_LOG_LEVEL": "info"}
# Seconds between completion checks when waiting by sleeping (as the Mooncake way).
POLL_S = 0.0001


# Whether this process holds a NIXL agent (see leave()).
_AGENTS: list[object] = []


def leave(code: int) -> int:
    """Exit code for the agent: where a NIXL agent was made, end the process here, files flushed.
    NIXL 1.5.1's UCX backend segfaults when its agent is destroyed under the smoke image's Python
    (Debian 12, 3.11.2; seen on every exit, `del` included, not on a pyenv 3.11.7): the interpreter's
    own teardown would turn a finished run into exit 139, which reads as a dead container."""
    if _AGENTS:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


def _nixl():
    try:
        import nixl
    except ImportError as exc:
        raise UserError(f"NIXL cannot be imported here ({exc}); rebuild the smoke image with `make smoke-image`") from None
    return nixl


class NixlSide:
    """One NIXL agent with ``buf`` registered; the initiator also reads through it."""

    def __init__(self, name: str, buf: Buffer, log: Path) -> None:
        self.log = log
        log.unlink(missing_ok=True)  # a file left by an earlier run in this folder proves nothing
        os.environ.update(UCX_ENV, UCX_LOG_FILE=str(log))
        nixl = _nixl()
        self.agent = nixl.nixl_agent(name, nixl.nixl_agent_config(backends=["UCX"]))
        _AGENTS.append(self.agent)
        if "UCX" not in self.agent.backends:
            raise UserError("NIXL started without its UCX backend (plugin missing from the wheel?)")
        self.reg = self.agent.register_memory([(buf.addr, buf.nbytes, 0, "")], "DRAM")
        self.buf = buf

    def metadata(self) -> str:
        """This agent's metadata, for the peer (base64 text: it travels in JSON)."""
        return base64.b64encode(self.agent.get_agent_metadata()).decode()

    def add_peer(self, metadata: str) -> str:
        try:
            name = self.agent.add_remote_agent(base64.b64decode(metadata, validate=True))
        except (ValueError, TypeError) as exc:
            raise UserError(f"the prefill side's NIXL metadata is not usable ({exc}); restart both sides") from None
        return name.decode() if isinstance(name, bytes) else str(name)

    def read(self, peer: str, remote_addr: int, nbytes: int, block_bytes: int, wait: str, timeout_s: float) -> float:
        """READ ``nbytes`` of the peer's buffer into ours in blocks; seconds from request to completion."""
        parts = blocks(nbytes, block_bytes)
        t0 = time.perf_counter()
        local = self.agent.get_xfer_descs([(self.buf.addr + o, n, 0) for o, n in parts], "DRAM")
        remote = self.agent.get_xfer_descs([(remote_addr + o, n, 0) for o, n in parts], "DRAM")
        handle = self.agent.initialize_xfer("READ", local, remote, peer)
        try:
            state = self.agent.transfer(handle)
            deadline = t0 + timeout_s
            while state == "PROC":
                if wait == "sleep":
                    time.sleep(POLL_S)
                if time.perf_counter() > deadline:
                    raise RuntimeError(f"a NIXL read of {nbytes} B did not complete within {timeout_s:.0f} s")
                state = self.agent.check_xfer_state(handle)
            seconds = time.perf_counter() - t0
        finally:
            self.agent.release_xfer_handle(handle)
        if state != "DONE":
            raise RuntimeError(f"a NIXL read of {nbytes} B ended in state {state}")
        return seconds

    def transport(self, role: str) -> NixlTransport:
        """What UCX logged so far: the transports of each endpoint's lanes."""
        time.sleep(0.2)  # UCX's own threads may still be writing
        # UCX writes its log through C stdio, fully buffered for a file: flush every stream of this process.
        ctypes.CDLL(None).fflush(None)
        try:
            # Streamed through the one reader: a UCX log at info level can grow without bound.
            st = scan_latest_start(role, runfile.lines(self.log))
        except (OSError, UserError):
            st = scan(role, "")
        st.backends.update(self.agent.backends)
        return st


def require_tcp(st: NixlTransport) -> None:
    """The arm measures a network only if every lane UCX built is TCP."""
    if not st.transports:
        raise UserError(f"cannot tell which transports UCX used for NIXL ({st.describe()}); "
                        "UCX_LOG_LEVEL=info should have named them")
    other = sorted(set(st.transports) - {"tcp"})
    if other:
        raise UserError(f"NIXL's UCX moved bytes over {', '.join(other)}, not TCP only; the smoke's NIXL arm "
                        f"runs with UCX_TLS=tcp ({st.describe()})")
