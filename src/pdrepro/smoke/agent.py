"""The in-container side of the smoke test.

``target`` plays the prefill node: it holds one buffer of the largest KV size,
filled with the plan's pattern, registered with the Mooncake Transfer Engine,
and also served over a plain TCP socket. ``initiator`` plays the decode node:
it pulls each KV-sized prefix through the engine and through the socket,
checks every received byte against the pattern's digest, and writes the
timings as JSON. The two meet through a small HTTP control endpoint.

Run as ``python -m pdrepro.smoke.agent target|initiator``; settings come from
the environment that ``compose/smoke.yaml`` passes (see ``Settings``).
"""

from __future__ import annotations

import argparse
import ctypes
import http.server
import json
import mmap
import os
import resource
import socket
import statistics
import struct
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from ..errors import UserError
from . import transport as tp
from .plan import Plan, blocks, digest, expected_digests, pattern

_LEN = struct.Struct("!Q")


def log(msg: str) -> None:
    print(f"[smoke {ROLE}] {msg}", flush=True)


ROLE = "agent"


@dataclass(frozen=True)
class Settings:
    plan: Plan
    transport: str          # what the user asked for: auto | tcp | rdma
    control_port: int
    data_port: int
    peer: str               # the target's host name, for the initiator
    results: Path
    timeout_s: float
    host_ip: str | None
    wait: str = "sleep"     # how the initiator waits for the engine: sleep | spin

    @classmethod
    def from_env(cls, env=os.environ) -> "Settings":
        want = env.get("SMOKE_TRANSPORT", "auto")
        if want not in ("auto", "tcp", "rdma"):
            raise UserError(f"SMOKE_TRANSPORT={want!r}; use auto, tcp or rdma")
        wait = env.get("SMOKE_WAIT", "sleep")
        if wait not in ("sleep", "spin"):
            raise UserError(f"SMOKE_WAIT={wait!r}; use sleep or spin")
        if "SMOKE_PLAN" not in env:
            raise UserError("SMOKE_PLAN is not set; start the agents with `pdrepro smoke`")
        return cls(
            plan=Plan.from_json(env["SMOKE_PLAN"]),
            transport=want,
            control_port=int(env.get("SMOKE_CONTROL_PORT", "18080")),
            data_port=int(env.get("SMOKE_DATA_PORT", "18081")),
            peer=env.get("SMOKE_PEER", "prefill"),
            results=Path(env.get("SMOKE_RESULTS", "/results")),
            timeout_s=float(env.get("SMOKE_TIMEOUT_S", "600")),
            host_ip=env.get("SMOKE_HOST_IP") or None,
            wait=wait,
        )


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


def memory_peak() -> dict:
    """Peak memory of this container (cgroup) or, failing that, of this process."""
    for path in ("/sys/fs/cgroup/memory.peak", "/sys/fs/cgroup/memory/memory.max_usage_in_bytes"):
        try:
            return {"bytes": int(Path(path).read_text().split()[0]), "source": path}
        except (OSError, ValueError, IndexError):
            pass
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return {"bytes": int(line.split()[1]) * 1024, "source": "VmHWM"}
    return {"bytes": None, "source": None}


def memlock_limit() -> int | None:
    soft, _ = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    return None if soft == resource.RLIM_INFINITY else soft


def check_memlock(transport: str, need: int) -> None:
    """RDMA pins registered memory; TCP does not."""
    limit = memlock_limit()
    if transport == "rdma" and limit is not None and limit < need:
        raise UserError(
            f"memlock limit is {limit} B but RDMA must pin {need} B; raise SMOKE_MEMLOCK (bytes, -1 = unlimited) "
            "or use fewer/smaller --prompt-lens"
        )


class Buffer:
    """Page-aligned anonymous memory with a stable address for the engine."""

    def __init__(self, nbytes: int) -> None:
        self.nbytes = nbytes
        self.mem = mmap.mmap(-1, nbytes)
        self.view = memoryview(self.mem)
        self.addr = ctypes.addressof(ctypes.c_char.from_buffer(self.mem))

    def zero(self, nbytes: int) -> None:
        ctypes.memset(self.addr, 0, nbytes)


def start_engine(settings: Settings, host_ip: str):
    """Initialise the engine with the environment the TCP transport needs."""
    if settings.transport == "tcp":
        os.environ["MC_FORCE_TCP"] = "1"
    elif settings.transport == "rdma":
        os.environ.pop("MC_FORCE_TCP", None)
    # Without the pool, batches over TCP open a connection per slice.
    os.environ.setdefault("MC_TCP_ENABLE_CONNECTION_POOL", "1")
    # The transport is read from the engine's INFO lines; a quieter level hides it.
    os.environ["MC_LOG_LEVEL"] = "INFO"
    tap = StderrTap()
    try:
        from mooncake.engine import TransferEngine
    except ImportError as exc:
        raise UserError(f"the Mooncake Transfer Engine is not importable here ({exc}); run the agent in the smoke image") from None
    engine = TransferEngine()
    protocol = "rdma" if settings.transport == "rdma" else "tcp"
    if engine.initialize(host_ip, "P2PHANDSHAKE", protocol, "") != 0:
        raise UserError("the Mooncake Transfer Engine failed to initialise; see its log lines above")
    evidence = tp.detect(tap.settle(), force_tcp=os.environ.get("MC_FORCE_TCP") == "1")
    return engine, evidence


def require_transport(settings: Settings, evidence: tp.TransportEvidence) -> None:
    if evidence.transport is None:
        raise UserError("cannot tell which transport the engine installed (no RDMA or TCP start-up line in its log)")
    if settings.transport == "rdma" and evidence.transport != "rdma":
        reason = tp.fallback_reason(evidence, os.environ.get("MC_FORCE_TCP") == "1", Path("/dev/infiniband").is_dir())
        raise UserError(f"RDMA was requested but Mooncake fell back to {evidence.transport}: {reason}")


def my_ip(settings: Settings) -> str:
    return settings.host_ip or socket.gethostbyname(socket.gethostname())


def write_json(path: Path, data: dict) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2))
    tmp.replace(path)


# ---------------------------------------------------------------- target side

def serve_socket(buf: Buffer, port: int, stop: threading.Event) -> None:
    srv = socket.create_server(("", port), reuse_port=False)
    srv.settimeout(0.5)
    while not stop.is_set():
        try:
            conn, _ = srv.accept()
        except socket.timeout:
            continue
        threading.Thread(target=_send_loop, args=(conn, buf), daemon=True).start()


def _send_loop(conn: socket.socket, buf: Buffer) -> None:
    with conn:
        while True:
            head = conn.recv(_LEN.size, socket.MSG_WAITALL)
            if len(head) < _LEN.size:
                return
            (n,) = _LEN.unpack(head)
            conn.sendall(buf.view[: min(n, buf.nbytes)])


def run_target(settings: Settings) -> int:
    plan = settings.plan
    ip = my_ip(settings)
    log(f"allocating {plan.max_bytes} B and filling it with the pattern (seed {plan.seed})")
    buf = Buffer(plan.max_bytes)
    buf.view[:] = pattern(plan.seed, plan.max_bytes)
    engine, evidence = start_engine(settings, ip)
    require_transport(settings, evidence)
    check_memlock(evidence.transport, plan.max_bytes)
    if engine.register_memory(buf.addr, buf.nbytes) != 0:
        raise UserError(f"registering {buf.nbytes} B with the engine failed; if it is RDMA, raise SMOKE_MEMLOCK")
    stop = threading.Event()
    threading.Thread(target=serve_socket, args=(buf, settings.data_port, stop), daemon=True).start()
    info = {
        "segment": f"{ip}:{engine.get_rpc_port()}",
        "addr": buf.addr,
        "nbytes": buf.nbytes,
        "data_port": settings.data_port,
        "evidence": evidence.to_dict(),
    }

    class Control(http.server.BaseHTTPRequestHandler):
        def _reply(self, body: dict) -> None:
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):  # noqa: N802 (http.server naming)
            self._reply(info)

        def do_POST(self):  # noqa: N802
            self._reply({"memory_peak": memory_peak()})
            stop.set()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("", settings.control_port), Control)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    log(f"ready: segment {info['segment']}, transport {evidence.transport}, control :{settings.control_port}")
    finished = stop.wait(settings.timeout_s)
    server.shutdown()
    write_json(settings.results / "target.json",
               {"role": "target", "evidence": evidence.to_dict(), "memory_peak": memory_peak(),
                "memlock_bytes": memlock_limit(), "finished": finished})
    if not finished:
        log(f"no initiator finished within {settings.timeout_s:.0f} s; giving up")
        return 1
    log("done")
    return 0


# ------------------------------------------------------------- initiator side

def fetch_info(settings: Settings) -> dict:
    url = f"http://{settings.peer}:{settings.control_port}/"
    deadline = time.monotonic() + settings.timeout_s
    last = 0.0
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as resp:
                return json.loads(resp.read())
        except (urllib.error.URLError, OSError, ValueError) as exc:
            if time.monotonic() > deadline:
                raise UserError(f"the prefill side at {url} did not come up within {settings.timeout_s:.0f} s ({exc})") from None
            if time.monotonic() - last > 5:
                log(f"waiting for the prefill side at {url}")
                last = time.monotonic()
            time.sleep(0.3)


def finish_target(settings: Settings) -> dict:
    req = urllib.request.Request(f"http://{settings.peer}:{settings.control_port}/done", data=b"{}", method="POST")
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return json.loads(resp.read())
    except (urllib.error.URLError, OSError, ValueError):
        return {}


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
    conn.sendall(_LEN.pack(nbytes))
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
    times = {k: [] for k in ways}
    ok = {k: [] for k in ways}
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


def measure(kind: str, nbytes: int, repeats: int, local: Buffer, want: str, once) -> dict:
    return measure_interleaved(nbytes, repeats, local, want, {kind: once})[kind]


def run_initiator(settings: Settings) -> int:
    plan = settings.plan
    out = settings.results / "initiator.json"
    info = fetch_info(settings)
    if info["nbytes"] < plan.max_bytes:
        raise UserError(f"the prefill side holds {info['nbytes']} B but the plan needs {plan.max_bytes} B; restart both sides")
    log(f"prefill side at {info['segment']}; computing expected digests")
    want = expected_digests(plan)
    local = Buffer(plan.max_bytes)
    engine, evidence = start_engine(settings, my_ip(settings))
    result = {"role": "initiator", "requested_transport": settings.transport, "wait": settings.wait,
              "evidence": evidence.to_dict(),
              "target_evidence": info["evidence"], "plan": json.loads(plan.to_json()),
              "memlock_bytes": memlock_limit(), "rows": [], "error": None}
    try:
        require_transport(settings, evidence)
        require_transport(settings, tp.TransportEvidence.from_dict(info["evidence"]))
        check_memlock(evidence.transport, plan.max_bytes)
        if engine.register_memory(local.addr, local.nbytes) != 0:
            raise UserError(f"registering {local.nbytes} B with the engine failed; if it is RDMA, raise SMOKE_MEMLOCK")
        log(f"transport {evidence.transport}; {len(plan.rows)} sizes x {plan.repeats} transfers each, "
            f"blocks of {plan.block_bytes} B, waiting by {settings.wait}")
        peer_ip = info["segment"].rsplit(":", 1)[0]
        with socket.create_connection((peer_ip, info["data_port"]), timeout=settings.timeout_s) as conn:
            for row in plan.rows:
                n = row.kv_bytes
                both = measure_interleaved(n, plan.repeats, local, want[row.prompt_len], {
                    "mooncake": lambda: mooncake_read(engine, info["segment"], local, info["addr"], n,
                                                      plan.block_bytes, settings.wait),
                    "socket": lambda: socket_read(conn, local, n),
                })
                mc, sk = both["mooncake"], both["socket"]
                result["rows"].append({"prompt_len": row.prompt_len, "kv_bytes": n, "mooncake": mc, "socket": sk})
                write_json(out, result)
                log(f"{row.prompt_len:>6} tokens {n:>11} B: mooncake {mc['ms_median']:8.2f} ms "
                    f"({n / mc['ms_median'] / 1e6:6.2f} GB/s), socket {sk['ms_median']:8.2f} ms "
                    f"({n / sk['ms_median'] / 1e6:6.2f} GB/s), verified {mc['verified'] and sk['verified']}")
    except (UserError, RuntimeError) as exc:
        result["error"] = str(exc)
        raise
    finally:
        done = finish_target(settings)
        result["target_memory_peak"] = done.get("memory_peak")
        result["memory_peak"] = memory_peak()
        write_json(out, result)
    return 0


def main(argv: list[str] | None = None) -> int:
    global ROLE
    parser = argparse.ArgumentParser(prog="python -m pdrepro.smoke.agent")
    parser.add_argument("role", choices=("target", "initiator"))
    args = parser.parse_args(argv)
    ROLE = "prefill" if args.role == "target" else "decode"
    try:
        settings = Settings.from_env()
        settings.results.mkdir(parents=True, exist_ok=True)
        return run_target(settings) if args.role == "target" else run_initiator(settings)
    except (UserError, RuntimeError) as exc:
        print(f"[smoke {ROLE}] error: {exc}", flush=True)
        return 3


if __name__ == "__main__":
    sys.exit(main())
