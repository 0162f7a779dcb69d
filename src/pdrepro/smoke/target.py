"""The prefill side of the smoke: holds the pattern, registered and served.

One buffer of the largest KV size, filled with the plan's pattern, is
registered with the engine (and, when asked for, with a NIXL agent) and also
served over a plain TCP socket; a small HTTP endpoint tells the initiator
where to read and hears when it is done.
"""

from __future__ import annotations

import http.server
import json
import socket
import threading

from ..core.errors import UserError
from ..scenario.smokeplan import pattern
from .engine import require_transport, start_engine
from .measure import REQUEST
from .memory import Buffer, memlock_limit, memory_peak, require_memlock
from .nixlpath import NixlSide
from .output import say, write_json
from .settings import Settings, my_ip

ROLE = "prefill"


def log(msg: str) -> None:
    say(ROLE, msg)


def serve_socket(buf: Buffer, port: int, stop: threading.Event) -> None:
    srv = socket.create_server(("", port), reuse_port=False)
    srv.settimeout(0.5)
    while not stop.is_set():
        try:
            conn, _ = srv.accept()
        except TimeoutError:
            continue
        threading.Thread(target=_send_loop, args=(conn, buf), daemon=True).start()


def _send_loop(conn: socket.socket, buf: Buffer) -> None:
    with conn:
        while True:
            head = conn.recv(REQUEST.size, socket.MSG_WAITALL)
            if len(head) < REQUEST.size:
                return
            (n,) = REQUEST.unpack(head)
            conn.sendall(buf.view[: min(n, buf.nbytes)])


def run_target(settings: Settings) -> int:
    plan = settings.plan
    ip = my_ip(settings)
    log(f"allocating {plan.max_bytes} B and filling it with the pattern (seed {plan.seed})")
    buf = Buffer(plan.max_bytes)
    buf.view[:] = pattern(plan.seed, plan.max_bytes)
    engine, evidence = start_engine(settings, ip)
    require_transport(settings, evidence)
    require_memlock(evidence.transport, plan.max_bytes)
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
    side = None
    if "nixl" in settings.backends:
        side = NixlSide(ROLE, buf, settings.results / f"ucx-{ROLE}.log")
        info["nixl"] = {"metadata": side.metadata(), "addr": buf.addr}

    def nixl_proof() -> dict | None:
        # The target's lanes are built when the initiator connects: read them when it is done.
        return side.transport(ROLE).to_dict() if side is not None else None

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
            self._reply({"memory_peak": memory_peak(), "nixl_transport": nixl_proof()})
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
                "memlock_bytes": memlock_limit(), "finished": finished, "nixl_transport": nixl_proof()})
    if not finished:
        log(f"no initiator finished within {settings.timeout_s:.0f} s; giving up")
        return 1
    log("done")
    return 0
