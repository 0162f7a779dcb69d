"""`pdrepro stack up --stack regular`: a comparison's regular stack (two regular servers, then the router
with --worker-urls) started, shown and stopped by the host launcher against the stand-in servers, with the
same proof, readiness rules and record as the disaggregated stack."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from stackhelp import REPO, alive, cmdline, decoy_server, env, free_ports, kill, stack, wait_gone

from pdrepro.launch.stack import ownership, record

SCENARIO = REPO / "src/pdrepro/scenarios/a10-qwen25-7b-onebox-rate4.yaml"
PORTS = "ports: {prefill: 30000, decode: 30001, bootstrap: 8998, router: 8000, regular: [30000, 30001]}"


def comparison_site(tmp_path: Path, scenario: Path = SCENARIO) -> dict:
    """The shipped one-box comparison on free ports, a model folder and a run folder."""
    prefill, decode, bootstrap, router = free_ports(4)
    text = scenario.read_text()
    assert PORTS in text
    text = text.replace(PORTS, f"ports: {{prefill: {prefill}, decode: {decode}, bootstrap: {bootstrap}, "
                               f"router: {router}, regular: [{prefill}, {decode}]}}")
    path = tmp_path / "comparison.yaml"
    path.write_text(text)
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    return {"scenario": path, "model": model, "run": tmp_path / "run", "router": router,
            "workers": (prefill, decode),
            "options": ["--scenario", str(path), "--model", str(model), "--gpus", "0", "--force-tcp"]}


@pytest.fixture
def csite(tmp_path):
    made = comparison_site(tmp_path)
    yield made
    if record.path(made["run"]).is_file():
        stack("down", str(made["run"]), "--grace", "1")


def _up(site, *extra, env_=None) -> subprocess.CompletedProcess:
    return stack("up", "--stack", "regular", *site["options"], "--out", str(site["run"]), "--poll", "0.1",
                 "--grace", "5", *extra, env_=env_)


def test_regular_stack_up_status_down(csite):
    decoy = decoy_server(free_ports(1)[0])
    try:
        started = _up(csite)
        assert started.returncode == 0, started.stdout + started.stderr
        rec = record.read(csite["run"])
        assert rec.stack == "regular"
        assert [(p.name, p.role.value) for p in rec.processes] == [
            ("regular-0", "regular"), ("regular-1", "regular"), ("router", "router")]
        w0, w1 = csite["workers"]
        for p, port in zip(rec.processes, (w0, w1)):
            assert cmdline(p.pid) == list(p.argv) and p.port == port
            assert "--disaggregation-mode" not in p.argv
            # One GPU shared: each its part of the memory, as the scenario says.
            assert p.argv[p.argv.index("--mem-fraction-static") + 1] == "0.35"
            assert p.env["CUDA_VISIBLE_DEVICES"] == "0" and "MC_FORCE_TCP" not in p.env
            assert ownership.marker(p.pid) == rec.stack_id
        router = rec.processes[2]
        i = router.argv.index("--worker-urls")
        assert list(router.argv[i + 1:i + 3]) == [f"http://127.0.0.1:{w0}", f"http://127.0.0.1:{w1}"]
        assert "--pd-disaggregation" not in router.argv
        # Started one after the other: each was healthy before the next began.
        assert [p.started_at for p in rec.processes] == sorted(p.started_at for p in rec.processes)
        with urllib.request.urlopen(f"http://127.0.0.1:{w1}/get_server_info", timeout=5) as resp:
            assert json.loads(resp.read())["disaggregation_mode"] == "regular"
        # The router reaches both servers at the URLs it was given: requests go to each in turn.
        for _ in range(4):
            req = urllib.request.Request(f"http://127.0.0.1:{csite['router']}/generate", data=b'{"input_ids": [1]}',
                                         headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=10) as resp:
                assert json.loads(resp.read())["text"].strip() == "standin"
        for name in ("regular-0", "regular-1"):
            assert (csite["run"] / "logs" / f"{name}.log").read_text().count('"POST /generate') == 2

        status = stack("status", str(csite["run"]))
        assert status.returncode == 0, status.stdout + status.stderr
        assert "(regular)" in status.stdout and status.stdout.count("healthy") == 3
        forked = [pid for pid in ownership.marked(rec.stack_id) if pid not in {p.pid for p in rec.processes}]
        assert len(forked) == 2

        down = stack("down", str(csite["run"]))
        assert down.returncode == 0, down.stderr
        assert down.stdout.count("stopped (SIGTERM)") == 5
        assert all(not alive(p.pid, p.start_ticks) for p in rec.processes)
        assert wait_gone(forked) == []
        assert decoy.poll() is None, "stack down stopped a process it did not start"
    finally:
        kill(decoy)


def test_a_regular_server_naming_another_model_is_refused(csite):
    started = _up(csite, env_=env(STANDIN_INFO_MODEL="/elsewhere"))
    assert started.returncode == 1
    assert "regular-0 says at" in started.stderr and "/elsewhere" in started.stderr
    rec = record.read(csite["run"])
    assert rec.stopped_at is not None and all(not alive(p.pid, p.start_ticks) for p in rec.processes)


def test_a_scenario_without_a_regular_stack_is_refused_in_one_line(tmp_path):
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    out = stack("up", "--stack", "regular", "--model", str(model), "--gpus", "0", "--out", str(tmp_path / "run"))
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "has no regular stack" in lines[0] and "Traceback" not in out.stderr
    assert not (tmp_path / "run" / "stack.json").exists()


def test_a_port_held_by_another_process_is_refused(csite):
    holder = subprocess.Popen([sys.executable, "-m", "http.server", str(csite["workers"][1]), "--bind", "127.0.0.1"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        import time
        deadline = time.monotonic() + 10
        while not ownership.listening_inodes(csite["workers"][1]) and time.monotonic() < deadline:
            time.sleep(0.05)
        out = _up(csite)
        assert out.returncode == 2 and f"port {csite['workers'][1]} (regular-1)" in out.stderr
        assert holder.poll() is None
    finally:
        holder.kill()
        holder.wait()
