"""One side of the check, run as its own process on its own GPU.

``python -m pdrepro.gpucheck.side target|initiator`` reads one JSON request
per line on stdin and answers one JSON line on stdout; the engine's log goes
to stderr, which the parent keeps. The target plays the decode node (it owns
the receive buffer) and the initiator the prefill node, which writes its KV into
the target's buffer as SGLang's Mooncake backend does; or, with the roles of the
two buffers swapped, the initiator reads (pulls) from the target.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from ..core.errors import UserError
from ..host.mooncake_engine import start
from . import pattern
from .buffers import DeviceBuffer, HostBuffer


def _reply(**data) -> None:
    sys.stdout.write(json.dumps(data) + "\n")
    sys.stdout.flush()


def _engine(host: str):
    # The protocol argument only matters when no HCA is usable; MC_FORCE_TCP,
    # set by the parent for --transport tcp, is what really selects TCP.
    return start(host, "tcp" if os.environ.get("MC_FORCE_TCP") == "1" else "rdma", "run the check in the GPU image")


def _buffer(args):
    if args.memory == "host":
        return HostBuffer(args.bytes)
    from .cudart import Runtime
    return DeviceBuffer(Runtime(), args.gpu, args.bytes)


def _register(engine, buf) -> None:
    # GPU memory registration is the step that fails without nvidia-peermem or
    # dma-buf on RDMA; say which memory it was.
    if engine.register_memory(buf.addr, buf.nbytes) != 0:
        where = f"GPU {buf.gpu} memory" if buf.kind == "gpu" else "host memory"
        raise UserError(f"the engine could not register {buf.nbytes} B of {where}; on RDMA this needs the "
                        "nvidia-peermem module or dma-buf (WITH_NVIDIA_PEERMEM=0), see `pdrepro doctor`")


def _serve(engine, buf, requests) -> None:
    """Answer the parent's requests until it says quit."""
    for line in requests:
        req = json.loads(line)
        op = req["op"]
        if op == "quit":
            return
        if op == "zero":
            buf.zero()
            _reply(ok=True)
        elif op == "digest":
            _reply(digest=buf.digest(int(req["bytes"])))
        elif op in ("write", "read"):
            nbytes, block, peer = int(req["bytes"]), int(req["block_bytes"]), int(req["peer_addr"])
            offs = list(range(0, nbytes, block))
            lens = [min(block, nbytes - o) for o in offs]
            call = engine.batch_transfer_sync_write if op == "write" else engine.batch_transfer_sync_read
            t0 = time.perf_counter()
            rc = call(req["segment"], [buf.addr + o for o in offs], [peer + o for o in offs], lens)
            _reply(rc=rc, seconds=time.perf_counter() - t0)


def side(args) -> None:
    engine = _engine(args.host)
    buf = _buffer(args)
    if args.fill:
        for off, data in pattern.chunks(args.seed, args.bytes):
            buf.write(off, data)
    _register(engine, buf)
    ready = {"ready": True, "addr": buf.addr, "memory": buf.kind}
    if args.role == "target":
        ready["segment"] = f"{args.host}:{engine.get_rpc_port()}"
    _reply(**ready)
    try:
        _serve(engine, buf, sys.stdin)
    finally:
        buf.close()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m pdrepro.gpucheck.side")
    p.add_argument("role", choices=("target", "initiator"))
    p.add_argument("--gpu", type=int, default=0)
    p.add_argument("--bytes", type=int, required=True)
    p.add_argument("--memory", choices=("gpu", "host"), default="gpu")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--fill", action="store_true", help="hold the pattern (the prefill side)")
    args = p.parse_args(argv)
    try:
        side(args)
    except UserError as exc:
        _reply(error=str(exc))
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
