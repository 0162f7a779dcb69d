"""An in-test PD stack: router, prefill and decode HTTP servers on 127.0.0.1,
their logs in the upstream formats, and a bench launcher that talks to them
and writes the client's JSONL. Test doubles only; the product never uses them.

Logs are written the way the real servers write them: Mooncake's glog lines at
start-up (RDMA or TCP transport), then, per finished request, the request-stats
lines that ``tests/runbuilder.py`` produces from the published figures.
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import requests
from runbuilder import Row, _metrics_text, build_run, published_rows

from pdrepro.core.pins import load_pins
from pdrepro.parsers.reqstats import parse_line
from pdrepro.scenario.model import Scenario
from pdrepro.sweep.benchclient import LengthTimeout

# What the fake client prints reaches the console as a real client's does: through the launcher's logger.
_CLIENT_OUTPUT = logging.getLogger("pdrepro.sweep.benchclient")


def _glog(source: str, text: str, level: str = "I") -> str:
    now = time.time()
    stamp = time.strftime("%m%d %H:%M:%S", time.gmtime(now)) + f".{int(now % 1 * 1e6):06d}"
    return f"{level}{stamp} 4711 {source}] {text}"


def mooncake_startup(transport: str, nics: int = 4) -> list[str]:
    """What the Transfer Engine (pinned commit) logs while installing its transport."""
    if transport == "force-tcp":
        return [_glog("transfer_engine_impl.cpp:218", "MC_FORCE_TCP is set, using TCP transport only"),
                _glog("tcp_transport.cpp:917", "TcpTransport: listen on port 15433")]
    if transport == "tcp":  # no HCA visible inside the container: silent TCP fallback
        return [_glog("transfer_engine_impl.cpp:253", "Auto-discovering topology..."),
                _glog("transfer_engine_impl.cpp:273", "Topology discovery complete. Found 0 HCAs."),
                _glog("tcp_transport.cpp:917", "TcpTransport: listen on port 15433")]
    if transport == "no-gid":
        return [_glog("transfer_engine_impl.cpp:253", "Auto-discovering topology..."),
                _glog("transfer_engine_impl.cpp:273", f"Topology discovery complete. Found {nics} HCAs."),
                _glog("rdma_context.cpp:1226", "No suitable GID found on mlx5_0/1", level="W"),
                _glog("transfer_engine_impl.cpp:384", "Failed to install RDMA transport, type=rdma", level="E")]
    if transport == "none":
        return []
    lines = [_glog("transfer_engine_impl.cpp:253", "Auto-discovering topology..."),
             _glog("transfer_engine_impl.cpp:273", f"Topology discovery complete. Found {nics} HCAs.")]
    for i in range(nics):
        lines.append(_glog("rdma_context.cpp:1220", f"Find best gid index: 3 on mlx5_{i}/1 (network state: with network device)"))
        lines.append(_glog("rdma_context.cpp:282", f"RDMA device: mlx5_{i}, LID: 0, GID: (GID_Index 3) "
                                                   f"00:00:00:00:00:00:00:00:00:00:ff:ff:c0:a8:{100 + i:02x}:0b, "
                                                   "num_lag_ports: 0"))
    lines.append(_glog("transfer_engine_impl.cpp:388", "installTransport, type=rdma"))
    return lines


class _Server:
    def __init__(self, role: str, cluster: FakeCluster):
        self.role = role
        self.cluster = cluster
        handler = self._handler()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        self.requests: list[tuple[str, str]] = []

    def healthy(self) -> bool:
        return self.cluster.ready_at is not None and time.monotonic() >= self.cluster.ready_at and \
            self.role not in self.cluster.never_ready

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep pytest output clean
                pass

            def _send(self, code: int, body, ctype="application/json"):
                data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                server.requests.append(("GET", self.path))
                c = server.cluster
                if server.role == "router":
                    if self.path in ("/liveness", "/health"):
                        return self._send(200, "OK", "text/plain")
                    if self.path == "/readiness" and not c.router_readiness:
                        return self._send(404, {"detail": "Not Found"})
                    if self.path == "/readiness":
                        ok = server.healthy() and all(s.healthy() for s in c.workers)
                        return self._send(200 if ok else 503, {"ready": ok})
                if self.path in ("/health", "/health_generate"):
                    if server.role != "router" and self.path == "/health_generate" and not c.health_generate:
                        return self._send(404, {"detail": "Not Found"})
                    return self._send(200 if server.healthy() else 503, "" if server.healthy() else "loading")
                if self.path == "/v1/models":
                    return self._send(200, {"object": "list", "data": [{"id": c.scenario.model.name, "object": "model"}]})
                if self.path == "/get_server_info":
                    return self._send(200, {"version": c.server_version, "disaggregation_mode": server.role,
                                            "tp_size": c.scenario.parallel.prefill_tp,
                                            "disaggregation_ib_device": c.ib_devices_file})
                if self.path == "/metrics":
                    if not c.metrics:
                        return self._send(404, {"detail": "Not Found"})
                    if server.role == "prefill":
                        return self._send(200, _metrics_text(c.transfers), "text/plain")
                    body = f'sglang:num_running_reqs{{engine_type="{server.role}",tp_rank="0"}} 0.0\n'
                    return self._send(200, body, "text/plain")
                return self._send(404, {"detail": "Not Found"})

            def do_POST(self):
                server.requests.append(("POST", self.path))
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                if self.path == "/flush_cache":
                    return self._send(200, "Cache flushed.", "text/plain")
                return self._send(404, {"detail": "Not Found"})

        return Handler

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@dataclass
class FakeCluster:
    root: Path
    scenario: Scenario
    transport: str = "rdma"
    ready_after_s: float | None = 0.0
    never_ready: set[str] = field(default_factory=set)
    health_generate: bool = True
    router_readiness: bool = True
    metrics: bool = False
    # The decode node's sysfs tree (sysfs_builder.FakeSysfs): the bench's KV is counted on
    # its NICs' port_rcv_data, unless the KV never crosses them (a path that only looks up).
    nics: object | None = None
    kv_crosses_nics: bool = True
    # What /get_server_info says the servers are: by default the image's build of the pins
    # (<release>+g<commit>, as docker/gpu.Dockerfile versions it), as a reproduction runs.
    server_version: str = field(default_factory=lambda: "{SGLANG_NEAREST_RELEASE}+g{SGLANG_COMMIT}".format(**load_pins()))
    # The GPU-to-NIC map the servers were started with, as every rendered target starts them (a file of GPU id to
    # devices, named by /get_server_info's disaggregation_ib_device); False: started without one.
    ib_devices: bool = True
    ib_devices_file: str | None = None

    def __post_init__(self):
        self.log_dir = Path(self.root) / "server-logs"
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.ready_at = None if self.ready_after_s is None else time.monotonic() + self.ready_after_s
        if self.ib_devices:
            from pdrepro.sweep.railmap import gpus_in_use

            path = Path(self.root) / "server-config" / "ib_devices.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps({str(g): f"mlx5_{g % 4}" for g in range(gpus_in_use(self.scenario))}))
            self.ib_devices_file = str(path)
        for role in ("prefill", "decode"):
            head = [f"server_args=ServerArgs(model_path='/models/{self.scenario.model.name}', disaggregation_mode='{role}', "
                    "disaggregation_transfer_backend='mooncake', enable_request_time_stats_logging=True)"]
            (self.log_dir / f"{role}.log").write_text("\n".join(head + mooncake_startup(self.transport)) + "\n")
        # Every KV transfer since start-up, as the prefill server's histograms count them.
        self.transfers = {"latency_ms": [], "total_mb": [], "speed_gb_s": []}
        self.router = _Server("router", self)
        self.prefill = _Server("prefill", self)
        self.decode = _Server("decode", self)
        self.workers = [self.prefill, self.decode]

    def append_log(self, role: str, lines: list[str]) -> None:
        with open(self.log_dir / f"{role}.log", "a") as fh:
            fh.write("\n".join(lines) + "\n")

    def close(self):
        for s in (self.router, self.prefill, self.decode):
            s.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _bench_args(argv: list[str]) -> argparse.Namespace:
    assert argv[1:3] == ["-m", "sglang.benchmark.serving"], argv
    p = argparse.ArgumentParser()
    for flag in ("--backend", "--base-url", "--model", "--served-model-name", "--tokenizer", "--dataset-name",
                 "--dataset-path", "--num-prompts", "--random-input-len", "--random-output-len",
                 "--random-range-ratio", "--request-rate", "--max-concurrency", "--seed", "--warmup-requests",
                 "--output-file"):
        p.add_argument(flag)
    for flag in ("--flush-cache", "--tokenize-prompt", "--output-details"):
        p.add_argument(flag, action="store_true")
    return p.parse_args(argv[3:])


@dataclass
class FakeBench:
    """Stands in for the bench client in the GPU image: checks the router the
    way the client does, then leaves the output the client would leave.

    ``behaviour`` maps a prompt length to what goes wrong there: "fail" (exit
    1), "hang" (runs past the timeout), "interrupt" (Ctrl-C), "short" (fewer
    completed requests than asked for), "empty" (every response without a token)."""

    cluster: FakeCluster
    behaviour: dict[int, str] = field(default_factory=dict)
    rows: dict[int, Row] = field(default_factory=dict)
    seconds: float = 0.0
    # Time before the client starts (a container's start-up): reported apart,
    # as the Docker launcher does, through last_client_s.
    startup_s: float | None = None
    last_client_s: float | None = None
    calls: list[int] = field(default_factory=list)
    argvs: list[list[str]] = field(default_factory=list)
    mounts: list[dict] = field(default_factory=list)

    def run(self, argv, *, mounts, timeout_s):
        if self.startup_s is not None:
            time.sleep(self.startup_s)
        started = time.monotonic()
        rc = self._client(argv, mounts=mounts, timeout_s=timeout_s)
        if self.startup_s is not None:
            self.last_client_s = time.monotonic() - started
        return rc

    def _client(self, argv, *, mounts, timeout_s):
        args = _bench_args(argv)
        length = int(args.random_input_len)
        self.calls.append(length)
        self.argvs.append(list(argv))
        self.mounts.append(dict(mounts))
        assert Path(args.dataset_path).is_file()
        what = self.behaviour.get(length)
        base = args.base_url
        requests.get(base + "/v1/models", timeout=5).raise_for_status()
        if args.flush_cache:
            requests.post(base + "/flush_cache", timeout=5).raise_for_status()
        _CLIENT_OUTPUT.info(f"    #Input tokens: {length * int(args.num_prompts)}")
        if what == "interrupt":
            Path(args.output_file).write_text('{"completed": ')  # cut off mid-write
            raise KeyboardInterrupt
        if what == "hang":
            time.sleep(timeout_s or 0)
            raise LengthTimeout(f"bench client ran past {timeout_s:.0f} s")
        if what == "fail":
            _CLIENT_OUTPUT.info("    Traceback (most recent call last): ... aiohttp.client_exceptions.ServerDisconnectedError")
            return 1
        time.sleep(self.seconds)
        row = self.rows.get(length) or next((r for r in published_rows(self.cluster.scenario) if r.prompt_len == length),
                                             Row(length, 100.0 + length / 10, 2.0 + length / 500))
        errors = {length: 3} if what == "short" else {}
        # "empty": every request answered with HTTP 200 and no token.
        tokens = {length: 0} if what == "empty" else {}
        with tempfile.TemporaryDirectory() as tmp:
            built = build_run(Path(tmp), self.cluster.scenario, rows=[row], errors=errors, output_tokens=tokens)
            shutil.copyfile(built.bench_file(length), args.output_file)
            for role, path in (("prefill", built.prefill_log), ("decode", built.decode_log)):
                lines = [line for line in path.read_text().splitlines() if "Time Stats(" in line or "ReqTimeStats(" in line]
                # Served now, while the sweep measures this length (the builder's clock starts on another day).
                now = time.strftime("[%Y-%m-%d %H:%M:%S", time.gmtime())
                lines = [re.sub(r"^\[\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:\.\d+)?", now, line) for line in lines]
                self.cluster.append_log(role, lines)
                if role == "prefill":
                    for stat in filter(None, map(parse_line, lines)):
                        if stat.transfer_s is not None and not stat.is_health_check:
                            self.cluster.transfers["latency_ms"].append(stat.transfer_s * 1000)
                            self.cluster.transfers["total_mb"].append(stat.transfer_total_MiB)
                            self.cluster.transfers["speed_gb_s"].append(stat.transfer_speed_GiB_s)
        nics = self.cluster.nics
        if nics is not None and self.cluster.kv_crosses_nics:
            sc = self.cluster.scenario
            sent = int(args.num_prompts) - errors.get(length, 0) + sc.sweep.warmup_requests
            moved = int(sc.kv_bytes(length) * sent * 1.02)
            names = sorted(p.name for p in (nics.root / "class" / "infiniband").iterdir())
            for name in names:
                nics.traffic(name, received=moved // len(names), sent=moved // len(names) // 1000)
            # A fabric takes time to move it: no faster than the scenario's line rate.
            time.sleep(moved / (sc.line_rate_GB_s * 1e9) * 1.25)
        return 0
