"""A rendered prefill.yaml really started by the engine: the log wrapper writes the
raw output to the host folder and keeps the exit status, the health check
runs, and the RDMA-related limits reach the container.

No GPU or RDMA device here: an override drops the GPU reservation and the
verbs devices, keeps only the capability this host grants (IPC_LOCK), swaps
the SGLang command for a small HTTP server, and the CPU smoke image stands
in for the GPU image. Everything else is the file `pdrepro render` wrote.
"""

from __future__ import annotations

import json
import socket
import subprocess
import uuid
from pathlib import Path

import pytest
import yaml
from composecli import compose_cmd
from smokeimage import smoke_image

from pdrepro.cli import main
from pdrepro.scenario.model import load_scenario

pytestmark = pytest.mark.docker

FAKE_SERVER = """
import http.server, os, sys
limits = open('/proc/self/limits').read()
print('fake server up', sys.argv[1:], flush=True)
print('memlock', limits.split('Max locked memory')[1].split()[0], flush=True)
print('tunables set', sorted(k for k in os.environ if k.startswith('MC_')), flush=True)
import signal
def stop(*_):
    print('fake server stopping on SIGTERM', flush=True)
    sys.exit(0)
signal.signal(signal.SIGTERM, stop)
if os.environ.get('FAIL'):
    print('fatal: cannot register memory', file=sys.stderr, flush=True)
    sys.exit(3)
class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == '/health_generate' else 404)
        self.end_headers()
http.server.HTTPServer(('127.0.0.1', int(os.environ['PORT'])), Health).serve_forever()
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stack(tmp_path: Path, fail: bool):
    image = smoke_image()
    cmd = compose_cmd()
    name = f"pdrepro-test-{uuid.uuid4().hex[:10]}"
    for d in ("model", "logs"):
        (tmp_path / d).mkdir()
    (tmp_path / "model" / "config.json").write_text("{}")
    (tmp_path / "sharegpt.json").write_text("[]")
    (tmp_path / "ib_devices.json").write_text(json.dumps({str(gpu): "rxe0" for gpu in range(8)}))
    port = _free_port()
    data = load_scenario("h20-qwen3-235b-1p1d").to_dict()
    data["launch"]["ports"].update(prefill=port, decode=_free_port())
    if not fail:
        data["launch"]["env"]["MC_SLICE_SIZE"] = "131072"
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(yaml.safe_dump(data, sort_keys=False))
    deploy = tmp_path / "deploy"
    # One node (both addresses the same), so 16 GPU ids for the two TP-8 servers; only prefill starts here.
    assert main(["render", "--scenario", str(scenario), "--prefill-ip", "127.0.0.1", "--decode-ip", "127.0.0.1",
                 "--gpus", ",".join(map(str, range(16))),
                 "--model", str(tmp_path / "model"), "--dataset", str(tmp_path / "sharegpt.json"),
                 "--ib-devices", str(tmp_path / "ib_devices.json"), "--log-dir", str(tmp_path / "logs"),
                 "--memlock", str(8 * 2**20), "--out", str(deploy)]) == 0
    env_file = deploy / "prefill.env"
    env_file.write_text(env_file.read_text().replace("SERVER_START_PERIOD=3600s", "SERVER_START_PERIOD=60s"))
    environment = {"PORT": str(port), **({"FAIL": "1"} if fail else {})}
    # `!reset`/`!override` drop what this host lacks: GPUs, verbs devices,
    # CAP_SYS_RESOURCE, and start_interval (engines before v25 reject it).
    (tmp_path / "override.yaml").write_text(
        "services:\n  prefill:\n"
        f"    container_name: {name}\n"
        f"    image: {image}\n"
        "    deploy: !reset {}\n"
        "    devices: !reset []\n"
        "    cap_add: !override [IPC_LOCK]\n"
        f"    command: !override {json.dumps(['python3', '-c', FAKE_SERVER, '--port', str(port)])}\n"
        f"    environment: {json.dumps(environment)}\n"
        "    healthcheck:\n      start_interval: !reset null\n      interval: 1s\n      timeout: 5s\n      retries: 3\n"
    )
    base = [*cmd, "-p", name, "-f", str(deploy / "prefill.yaml"), "-f", str(tmp_path / "override.yaml"),
            "--env-file", str(env_file)]
    return base, name


def _inspect(name: str) -> dict:
    out = subprocess.run(["docker", "inspect", name], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)[0]


def test_prefill_container_starts_healthy_and_logs_to_host(tmp_path):
    base, name = _stack(tmp_path, fail=False)
    try:
        up = subprocess.run([*base, "up", "-d", "--wait"], capture_output=True, text=True, timeout=180)
        assert up.returncode == 0, up.stderr
        info = _inspect(name)
        assert info["State"]["Health"]["Status"] == "healthy"
        host = info["HostConfig"]
        assert host["NetworkMode"] == "host" and host["IpcMode"] == "host" and host["Init"] is True
        assert "CAP_IPC_LOCK" in host["CapAdd"] or "IPC_LOCK" in host["CapAdd"]
        assert {u["Name"]: u["Hard"] for u in host["Ulimits"]}["memlock"] == 8 * 2**20
        env = dict(e.split("=", 1) for e in info["Config"]["Env"] if "=" in e)
        assert env["SGLANG_HOST_IP"] == "127.0.0.1" and env["MOONCAKE_PROTOCOL"] == "rdma"
        log = (tmp_path / "logs" / "prefill.log").read_text()
        assert "fake server up ['--port'" in log
        assert f"memlock {8 * 2**20}" in log
        # A tunable set in the env file arrives; the unset ones are absent, not empty.
        assert "tunables set ['MC_SLICE_SIZE']" in log
        # `down` stops the server with SIGTERM (handed on by the log wrapper), and its last line reaches the log.
        down = subprocess.run([*base, "down", "--timeout", "30"], capture_output=True, text=True, timeout=120)
        assert down.returncode == 0, down.stderr
        log = (tmp_path / "logs" / "prefill.log").read_text()
        assert log.rstrip().endswith("fake server stopping on SIGTERM"), log[-500:]
    finally:
        subprocess.run([*base, "down", "--timeout", "5"], capture_output=True, timeout=120)


def test_exiting_server_keeps_its_status_and_last_lines(tmp_path):
    base, name = _stack(tmp_path, fail=True)
    try:
        up = subprocess.run([*base, "up", "-d", "--wait"], capture_output=True, text=True, timeout=180)
        assert up.returncode != 0
        info = _inspect(name)
        assert info["State"]["Status"] == "exited" and info["State"]["ExitCode"] == 3
        log = (tmp_path / "logs" / "prefill.log").read_text()
        assert log.rstrip().endswith("fatal: cannot register memory")
    finally:
        subprocess.run([*base, "down", "--timeout", "5"], capture_output=True, timeout=120)
