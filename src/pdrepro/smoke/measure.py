"""How the smoke measures a transfer.

Each KV size is moved two ways, the Mooncake Transfer Engine and a plain TCP
socket copy, taking turns so that both see the same load. Every transfer
lands in a zeroed buffer and is checked against the pattern's digest; the
time is from the request to the last byte.
"""

from __future__ import annotations

import socket
import statistics
import struct
import time

from ..scenario.smokeplan import blocks, digest
from .memory import Buffer

# The socket way's request: the byte count the target is to send, network order.
REQUEST = struct.Struct("!Q")

# Seconds between completion checks when waiting by sleeping.
POLL_S = 0.0001


def mooncake_read(engine, segment: str, local: Buffer, remote_addr: int, nbytes: int, block_bytes: int,
                  wait: str = "sleep") -> float:
    """Pull ``nbytes`` in blocks; return the seconds from submit to the last block's completion.

    ``spin`` uses the engine's synchronous batch call, which busy-polls for
    completion (what SGLang's transfer threads do). ``sleep`` submits one
    single-block batch per block and checks them with short sleeps: on a
    2-core machine a spinning waiter takes the CPU the engine's own I/O thread
    needs, which measures the waiter rather than the engine.
    """
    parts = blocks(nbytes, block_bytes)
    if wait == "spin":
        t0 = time.perf_counter()
        rc = engine.batch_transfer_sync_read(segment, [local.addr + o for o, _ in parts],
                                             [remote_addr + o for o, _ in parts], [n for _, n in parts])
        dt = time.perf_counter() - t0
        if rc != 0:
            raise RuntimeError(f"batch_transfer_sync_read of {nbytes} B returned {rc}")
        return dt
    t0 = time.perf_counter()
    pending = []
    for off, n in parts:
        # One block per batch: the engine's status call reports on a batch's first task only in some builds.
        batch = engine.batch_transfer_async_read(segment, [local.addr + off], [remote_addr + off], [n])
        if batch <= 0:
            raise RuntimeError(f"submitting a {n} B read at offset {off} failed")
        pending.append(batch)
    while pending:
        still = []
        for batch in pending:
            status = engine.transfer_check_status(batch)
            if status == 0:
                still.append(batch)
            elif status != 1:
                raise RuntimeError(f"a block of the {nbytes} B read ended with status {status} "
                                   "(-1 failed, -2 timed out)")
        pending = still
        if pending:
            time.sleep(POLL_S)
    return time.perf_counter() - t0


def socket_read(conn: socket.socket, local: Buffer, nbytes: int) -> float:
    t0 = time.perf_counter()
    conn.sendall(REQUEST.pack(nbytes))
    got = 0
    while got < nbytes:
        n = conn.recv_into(local.view[got:nbytes], nbytes - got)
        if n == 0:
            raise RuntimeError(f"the socket closed after {got} of {nbytes} B")
        got += n
    return time.perf_counter() - t0


def measure_interleaved(nbytes: int, repeats: int, local: Buffer, want: str, ways: dict) -> dict:
    """One warm-up, then ``repeats`` timed transfers per way, the ways taking
    turns so that both see the same load; every transfer is verified."""
    times: dict[str, list[float]] = {k: [] for k in ways}
    ok: dict[str, list[bool]] = {k: [] for k in ways}
    for i in range(repeats + 1):
        for kind, once in ways.items():
            local.zero(nbytes)  # a transfer that moves nothing cannot pass the check
            seconds = once()
            good = digest(local.view[:nbytes]) == want
            if i == 0:
                if not good:
                    ok[kind].append(False)
                continue
            times[kind].append(seconds * 1000)
            ok[kind].append(good)
    return {kind: {"kind": kind, "ms": times[kind], "verified": all(ok[kind]),
                   "failed_checks": ok[kind].count(False), "ms_median": statistics.median(times[kind]),
                   "ms_mean": statistics.fmean(times[kind])} for kind in ways}
