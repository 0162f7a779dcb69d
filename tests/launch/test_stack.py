"""The host launcher (`pdrepro stack up|down|status`) against stand-in servers that speak the real
endpoints (tests/fixtures/standin: a fake `python -m sglang.launch_server` and
`python -m sglang_router.launch_router` first on the children's PYTHONPATH)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import pytest
from render_targets import host_commands
from stackhelp import STANDIN, alive, cmdline, decoy_server, env, free_ports, kill, site, stack, up, up_argv, wait_gone

from pdrepro.cli import main
from pdrepro.launch.stack import ownership, record

__all__ = ["site"]  # the fixture, used by name


def _rendered(site, tmp_path) -> dict[str, tuple[dict[str, str], list[str]]]:
    """name -> (env, argv) as `pdrepro render --target onebox --launcher host` prints them."""
    out = tmp_path / "rendered"
    assert main(["render", "--target", "onebox", "--launcher", "host", *site["options"], "--out", str(out)]) == 0
    return host_commands((out / "commands.txt").read_text())


def _get(url: str) -> tuple[int, dict]:
    with urllib.request.urlopen(url, timeout=5) as resp:
        return resp.status, json.loads(resp.read())


def test_up_status_down_stops_exactly_what_it_started(site, tmp_path):
    decoy = decoy_server(free_ports(1)[0])
    try:
        started = up(site)
        assert started.returncode == 0, started.stdout + started.stderr
        assert "sglang 0.0.0+standin, sglang-router 0.0.0+standin, mooncake-transfer-engine 0.0.0+standin" in started.stdout
        rec = record.read(site["run"])
        assert [p.name for p in rec.processes] == ["prefill-0", "decode-0", "router"]
        assert rec.python == sys.executable and rec.packages["sglang"] == "0.0.0+standin"
        assert rec.modules["sglang.launch_server"] == str(STANDIN / "sglang" / "launch_server.py")
        rendered = _rendered(site, tmp_path)
        for p, role in zip(rec.processes, ("prefill", "decode", "router")):
            # Exactly what render prints: the argv the process runs, and its environment on top of ours.
            env, argv = rendered[role]
            assert cmdline(p.pid) == list(p.argv) == argv
            assert p.env == {**env, "PYTHONUNBUFFERED": "1", "SPT_NOENV": "1"}
            assert ownership.marker(p.pid) == rec.stack_id  # and the marker, on top
            assert os.getpgid(p.pid) == p.pid and os.getsid(p.pid) == p.pid  # its own session
            assert (site["run"] / p.log).is_file() and p.healthy_after_s is not None
        assert rec.processes[0].env["MC_FORCE_TCP"] == "1" and rec.processes[0].env["CUDA_VISIBLE_DEVICES"] == "0"
        assert rec.processes[0].argv[-4:] == ("--mem-fraction-static", "0.3", "--attention-backend", "triton")
        assert (site["run"] / "logs" / "prefill.log").read_text().startswith("standin prefill: argv")
        assert (site["run"] / "logs" / "router.log").is_file()
        code, body = _get(f"http://127.0.0.1:{site['router']}/get_server_info")
        assert code == 200 and body["disaggregation_mode"] == "router"

        # Each server forked a child that calls itself sglang::scheduler, carrying the marker.
        forked = [pid for pid in ownership.marked(rec.stack_id) if pid not in {p.pid for p in rec.processes}]
        assert len(forked) == 2 and {ownership.comm(pid) for pid in forked} == {"sglang::sched"}

        status = stack("status", str(site["run"]))
        assert status.returncode == 0, status.stdout + status.stderr
        assert status.stdout.count(" running ") == 3 and status.stdout.count("healthy") == 3
        assert "2 process(es) the servers forked" in status.stdout

        down = stack("down", str(site["run"]))
        assert down.returncode == 0, down.stderr
        # The three it started and the two children they forked, each named with what was done to it.
        assert down.stdout.count("stopped (SIGTERM)") == 5 and "was not running" not in down.stdout
        for p in rec.processes:
            assert not alive(p.pid, p.start_ticks)
        assert wait_gone(forked) == [] and ownership.marked(rec.stack_id) == []
        assert decoy.poll() is None, "stack down stopped a process it did not start"
        status = stack("status", str(site["run"]))
        assert status.returncode == 1 and status.stdout.count("not running") == 3 and "stopped at" in status.stdout
        # Twice is harmless.
        assert "was not running" in stack("down", str(site["run"])).stdout
    finally:
        kill(decoy)


def test_a_server_that_dies_while_starting_is_reported_with_its_log(site):
    started = up(site, env_=env(STANDIN_EXIT_AT_START="decode"))
    assert started.returncode == 1, started.stdout + started.stderr
    assert "decode-0 exited with code 3 while starting" in started.stderr
    assert "last 20 lines of" in started.stderr and "stand-in told to fail at start" in started.stderr
    assert "loading step 9" not in started.stderr  # only the tail
    rec = record.read(site["run"])
    assert rec.stopped_at is not None
    prefill = rec.processes[0]
    assert not alive(prefill.pid, prefill.start_ticks), "the prefill it started is left running"
    assert ownership.marked(rec.stack_id) == [], "the prefill's forked child is left running"
    assert "prefill-0 (pid" in started.stdout and "stopped (SIGTERM)" in started.stdout


def test_progress_names_the_server_and_the_seconds_waited(site):
    started = up(site, "--progress-every", "0.4", env_=env(STANDIN_HEALTH_AFTER_S="1.5"))
    assert started.returncode == 0, started.stderr
    waits = [line for line in started.stdout.splitlines() if line.startswith("stack up: waiting for prefill-0")]
    assert len(waits) >= 2 and "/health)" in waits[0], started.stdout
    # Seconds waited so far, rising, and never past the time it took (the health answer comes at 1.5 s).
    seconds = [int(line.rsplit(": ", 1)[1].removesuffix(" s")) for line in waits]
    healthy = re.search(r"stack up: prefill-0 healthy after (\d+) s", started.stdout)
    assert healthy and seconds == sorted(seconds) and seconds[-1] <= int(healthy.group(1)), started.stdout
    assert int(healthy.group(1)) >= 2 > seconds[0]


def test_a_server_that_stays_unhealthy_times_out(site):
    started = up(site, "--start-timeout", "1", env_=env(STANDIN_HEALTH_AFTER_S="60"))
    assert started.returncode == 1
    assert "prefill-0 did not come up within 1 s: does not answer" in started.stderr
    assert "standin prefill: argv" in started.stderr
    p = record.read(site["run"]).processes[0]
    assert not alive(p.pid, p.start_ticks)


def test_sigterm_while_starting_stops_what_was_started(site):
    proc = subprocess.Popen(up_argv(site), env=env(STANDIN_HEALTH_AFTER_S="60"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not (record.path(site["run"]).is_file()
                                                and record.read(site["run"]).processes):
        time.sleep(0.1)
    prefill = record.read(site["run"]).processes[0]
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 143, out + err
    assert "interrupted; stopping what was started" in out and "interrupted (SIGTERM)" in err
    assert not alive(prefill.pid, prefill.start_ticks)
    assert ownership.marked(record.read(site["run"]).stack_id) == []


def test_missing_packages_are_named_in_one_line(site, tmp_path):
    partial = tmp_path / "partial"
    partial.mkdir()
    for name in ("sglang", "standin_server.py", "standin_lines.py"):
        (partial / name).symlink_to(STANDIN / name)
    started = up(site, env_=env(partial))
    assert started.returncode == 2
    lines = started.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot import sglang_router.launch_router, mooncake.engine" in lines[0], lines
    assert "make gpu-venv" in lines[0]
    assert not record.path(site["run"]).exists()


LIBRARY = "raise ImportError('libibverbs.so.1: cannot open shared object file')\n"


@pytest.mark.parametrize("where, text, cause", [
    ("mooncake/engine.py", LIBRARY, "ImportError: libibverbs.so.1: cannot open shared object"),
    ("sglang/__init__.py", LIBRARY, "ImportError: libibverbs.so.1: cannot open shared object"),
    ("mooncake/engine.py", "import orjson_not_installed_here\n",
     "ModuleNotFoundError: No module named 'orjson_not_installed_here'"),
])
def test_an_engine_module_whose_import_fails_is_named_with_its_own_cause(site, tmp_path, where, text, cause):
    # Installed but broken (a shared library missing beside a compiled engine, a package's own dependency):
    # "install it" would be wrong advice, the import's own error is the line.
    broken = tmp_path / "broken"
    shutil.copytree(STANDIN, broken, symlinks=True)
    (broken / where).write_text(text)
    started = up(site, env_=env(broken))
    assert started.returncode == 2, started.stdout + started.stderr
    lines = started.stderr.strip().splitlines()
    assert len(lines) == 1 and f"but importing it fails: {cause}" in lines[0], lines
    assert ("has mooncake.engine" if where.startswith("mooncake") else "has sglang.launch_server") in lines[0]
    assert "make gpu-venv" not in lines[0] and "Traceback" not in started.stdout + started.stderr
    assert not record.path(site["run"]).exists()


def test_a_port_in_use_is_refused(site):
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", site["router"]))
        s.listen()
        started = up(site)
    assert started.returncode == 2
    assert f"port {site['router']} (router) on 127.0.0.1 is in use already" in started.stderr
    assert not record.path(site["run"]).exists()


def test_status_of_a_folder_without_a_stack(tmp_path, capsys):
    assert main(["stack", "status", str(tmp_path)]) == 2
    assert "no stack.json there" in capsys.readouterr().err


def test_only_the_records_boot_and_roles_are_inputs_of_the_analysis(tmp_path):
    # `stack down` rewrites the record after the analysis (stopped_at): that must not make the summary stale.
    # Its boot id and roles are read by the transport evidence (is the sweep host the servers' host?), so a
    # change there must.
    import json

    from pdrepro.rundir import RunDir

    run = RunDir(tmp_path)
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "prefill.log").write_text("x\n")
    rec = {"boot_id": "b1", "processes": [{"role": "prefill", "pid": 10}, {"role": "decode", "pid": 11}]}
    (tmp_path / record.FILE_NAME).write_text(json.dumps(rec))
    before = run.inputs_signature()
    (tmp_path / record.FILE_NAME).write_text(json.dumps({**rec, "stopped_at": "2026-12-01T00:00:00+00:00"}))
    assert run.inputs_signature() == before
    (tmp_path / record.FILE_NAME).write_text(json.dumps({**rec, "boot_id": "b2"}))
    assert run.inputs_signature() != before
    (tmp_path / record.FILE_NAME).write_text(json.dumps(rec))
    (tmp_path / "logs" / "decode.log").write_text("y\n")
    assert run.inputs_signature() != before
