"""The host launcher (`pdrepro stack up|down|status`) against stand-in servers that speak the real
endpoints (tests/fixtures/standin: a fake `python -m sglang.launch_server` and
`python -m sglang_router.launch_router` first on the children's PYTHONPATH)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from render_targets import host_commands

from pdrepro.cli import main
from pdrepro.launch.stack import procs, record

REPO = Path(__file__).resolve().parents[2]
STANDIN = Path(__file__).parent.parent / "fixtures" / "standin"
SCENARIO = REPO / "src/pdrepro/scenarios/onebox-qwen25-0.5b.yaml"


def _free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


@pytest.fixture
def site(tmp_path):
    """The shipped one-box scenario on free ports (tests run in parallel), a model folder, a run folder."""
    prefill, decode, bootstrap, router = _free_ports(4)
    text = SCENARIO.read_text().replace(
        "ports: {prefill: 30000, decode: 30001, bootstrap: 8998, router: 8000}",
        f"ports: {{prefill: {prefill}, decode: {decode}, bootstrap: {bootstrap}, router: {router}}}")
    assert str(router) in text
    scenario = tmp_path / "onebox-test.yaml"
    scenario.write_text(text)
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    options = ["--scenario", str(scenario), "--model", str(model), "--gpus", "0", "--force-tcp",
               "--server-arg=--attention-backend triton"]
    return {"options": options, "run": tmp_path / "run", "router": router, "prefill": prefill, "tmp": tmp_path}


def _env(pythonpath: Path = STANDIN, **extra) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STANDIN_")}
    env["PYTHONPATH"] = os.pathsep.join([str(pythonpath), str(REPO / "src")])
    env.update(extra)
    return env


def _stack(*args, env=None, timeout=60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pdrepro", "stack", *args], capture_output=True, text=True,
                          env=env or _env(), timeout=timeout, cwd=REPO)


def _up(site, *extra, env=None, timeout=60) -> subprocess.CompletedProcess:
    return _stack("up", "--target", "onebox", "--launcher", "host", *site["options"], "--out", str(site["run"]),
                  "--poll", "0.1", "--grace", "5", *extra, env=env, timeout=timeout)


def _cmdline(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")[:-1]


def _rendered(site, tmp_path) -> dict[str, tuple[dict[str, str], list[str]]]:
    """name -> (env, argv) as `pdrepro render --target onebox --launcher host` prints them."""
    out = tmp_path / "rendered"
    assert main(["render", "--target", "onebox", "--launcher", "host", *site["options"], "--out", str(out)]) == 0
    return host_commands((out / "commands.txt").read_text())


def _decoy(port: int) -> subprocess.Popen:
    """An unrelated stand-in with the same kind of command line, started outside the stack."""
    return subprocess.Popen([sys.executable, "-m", "sglang.launch_server", "--port", str(port),
                             "--disaggregation-mode", "decode"], env=_env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)


def _get(url: str) -> tuple[int, dict]:
    with urllib.request.urlopen(url, timeout=5) as resp:
        return resp.status, json.loads(resp.read())


def test_up_status_down_stops_exactly_what_it_started(site, tmp_path):
    decoy = _decoy(_free_ports(1)[0])
    try:
        up = _up(site)
        assert up.returncode == 0, up.stdout + up.stderr
        assert "sglang 0.0.0+standin, sglang-router 0.0.0+standin, mooncake-transfer-engine 0.0.0+standin" in up.stdout
        rec = record.read(site["run"])
        assert [p.name for p in rec.processes] == ["prefill-0", "decode-0", "router"]
        assert rec.python == sys.executable and rec.packages["sglang"] == "0.0.0+standin"
        assert rec.modules["sglang.launch_server"] == str(STANDIN / "sglang" / "launch_server.py")
        rendered = _rendered(site, tmp_path)
        for p, role in zip(rec.processes, ("prefill", "decode", "router")):
            # Exactly what render prints: the argv the process runs, and its environment on top of ours.
            env, argv = rendered[role]
            assert _cmdline(p.pid) == list(p.argv) == argv
            assert p.env == {**env, "PYTHONUNBUFFERED": "1"}
            assert os.getpgid(p.pid) == p.pid and os.getsid(p.pid) == p.pid  # its own session
            assert (site["run"] / p.log).is_file() and p.healthy_after_s is not None
        assert rec.processes[0].env["MC_FORCE_TCP"] == "1" and rec.processes[0].env["CUDA_VISIBLE_DEVICES"] == "0"
        assert rec.processes[0].argv[-4:] == ("--mem-fraction-static", "0.3", "--attention-backend", "triton")
        assert (site["run"] / "logs" / "prefill.log").read_text().startswith("standin prefill: argv")
        assert (site["run"] / "logs" / "router.log").is_file()
        code, body = _get(f"http://127.0.0.1:{site['router']}/get_server_info")
        assert code == 200 and body["disaggregation_mode"] == "router"

        status = _stack("status", str(site["run"]))
        assert status.returncode == 0, status.stdout
        assert status.stdout.count(" running ") == 3 and status.stdout.count("healthy") == 3

        down = _stack("down", str(site["run"]))
        assert down.returncode == 0, down.stderr
        assert down.stdout.count("stopped (SIGTERM)") == 3
        for p in rec.processes:
            assert not procs.running(p.pid, p.start_ticks) and not procs.group_members(p.pid, p.start_ticks)
        assert decoy.poll() is None, "stack down stopped a process it did not start"
        status = _stack("status", str(site["run"]))
        assert status.returncode == 1 and status.stdout.count("not running") == 3 and "stopped at" in status.stdout
        # Twice is harmless.
        assert "was not running" in _stack("down", str(site["run"])).stdout
    finally:
        os.killpg(decoy.pid, signal.SIGKILL)
        decoy.wait()
        if record.path(site["run"]).is_file():
            _stack("down", str(site["run"]), "--grace", "1")


def test_a_recycled_pid_is_not_signalled(tmp_path):
    # A record naming a live PID whose start time differs (the PID came back to another process).
    decoy = _decoy(_free_ports(1)[0])
    try:
        ticks = procs.start_ticks(decoy.pid)
        rec = record.StackRecord(scenario="x", boot_id=procs.boot_id(), python=sys.executable, python_version="3",
                                 packages={}, modules={}, processes=(record.Started(
                                     name="prefill-0", role="prefill", pid=decoy.pid, start_ticks=ticks + 1,
                                     argv=("python",), env={}, log="logs/prefill.log", health_url="http://x/health",
                                     started_at="2026-12-01T00:00:00+00:00"),))
        record.save(tmp_path, rec)
        down = _stack("down", str(tmp_path))
        assert down.returncode == 0 and "was not running" in down.stdout
        time.sleep(0.3)
        assert decoy.poll() is None
        # Nor one whose start time was never read, nor the group of a PID someone else now holds.
        assert procs.group_members(decoy.pid, -1) == [] and procs.group_members(decoy.pid, ticks - 1) == []
        assert procs.group_members(decoy.pid, ticks) == [decoy.pid]
    finally:
        os.killpg(decoy.pid, signal.SIGKILL)
        decoy.wait()


def test_a_server_that_dies_while_starting_is_reported_with_its_log(site):
    up = _up(site, env=_env(STANDIN_EXIT_AT_START="decode"))
    assert up.returncode == 1, up.stdout + up.stderr
    assert "decode-0 exited with code 3 while starting" in up.stderr
    assert "last 20 lines of" in up.stderr and "stand-in told to fail at start" in up.stderr
    assert "loading step 9" not in up.stderr  # only the tail
    rec = record.read(site["run"])
    assert rec.stopped_at is not None
    prefill = rec.processes[0]
    assert not procs.group_members(prefill.pid, prefill.start_ticks), "the prefill it started is left running"
    assert "prefill-0 (pid" in up.stdout and "stopped (SIGTERM)" in up.stdout


def test_progress_names_the_server_and_the_seconds_waited(site):
    up = _up(site, "--progress-every", "0.4", env=_env(STANDIN_HEALTH_AFTER_S="1.5"))
    try:
        assert up.returncode == 0, up.stderr
        waits = [line for line in up.stdout.splitlines() if line.startswith("stack up: waiting for prefill-0")]
        assert len(waits) >= 2 and waits[-1].endswith(" 1 s"), up.stdout
        assert "/health)" in waits[0] and "stack up: prefill-0 healthy after 2 s" in up.stdout
    finally:
        _stack("down", str(site["run"]), "--grace", "1")


def test_a_server_that_stays_unhealthy_times_out(site):
    up = _up(site, "--start-timeout", "1", env=_env(STANDIN_HEALTH_AFTER_S="60"))
    assert up.returncode == 1
    assert "prefill-0 did not answer" in up.stderr and "within 1 s" in up.stderr and "standin prefill: argv" in up.stderr
    p = record.read(site["run"]).processes[0]
    assert not procs.group_members(p.pid, p.start_ticks)


def test_sigterm_while_starting_stops_what_was_started(site):
    proc = subprocess.Popen([sys.executable, "-m", "pdrepro", "stack", "up", *site["options"], "--out", str(site["run"]),
                             "--poll", "0.1", "--grace", "5"], env=_env(STANDIN_HEALTH_AFTER_S="60"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not (record.path(site["run"]).is_file()
                                                and record.read(site["run"]).processes):
        time.sleep(0.1)
    prefill = record.read(site["run"]).processes[0]
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, out + err
    assert "interrupted; stopping what was started" in out
    assert not procs.group_members(prefill.pid, prefill.start_ticks)


def test_missing_packages_are_named_in_one_line(site, tmp_path):
    partial = tmp_path / "partial"
    partial.mkdir()
    for name in ("sglang", "standin_server.py"):
        (partial / name).symlink_to(STANDIN / name)
    up = _up(site, env=_env(partial))
    assert up.returncode == 2
    lines = up.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot import sglang_router.launch_router, mooncake.engine" in lines[0], lines
    assert "make gpu-venv" in lines[0]
    assert not record.path(site["run"]).exists()


def test_a_port_in_use_is_refused(site):
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", site["router"]))
        s.listen()
        up = _up(site)
    assert up.returncode == 2
    assert f"port {site['router']} (router) on 127.0.0.1 is in use already" in up.stderr
    assert not record.path(site["run"]).exists()


def test_status_of_a_folder_without_a_stack(tmp_path, capsys):
    assert main(["stack", "status", str(tmp_path)]) == 2
    assert "no stack.json there" in capsys.readouterr().err


def test_the_record_is_no_input_of_the_analysis(tmp_path):
    # `stack down` rewrites it after the analysis; that must not make the summary stale.
    from pdrepro.rundir import RunDir

    run = RunDir(tmp_path)
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "prefill.log").write_text("x\n")
    before = run.inputs_signature()
    (tmp_path / record.FILE_NAME).write_text("{}")
    assert run.inputs_signature() == before
    (tmp_path / "logs" / "decode.log").write_text("y\n")
    assert run.inputs_signature() != before
