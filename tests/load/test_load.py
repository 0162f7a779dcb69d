"""`pdrepro load` as a user runs it: a real one-box stack of stand-in servers (`pdrepro stack up`, host launcher,
tests/fixtures/standin: SGLang's ReqTimeStats lines in the recorded format, /metrics in the recorded scrapes'
format), the stand-in bench client in place, the servers' logs from the stack's folder, /metrics scraped per
step; then `pdrepro check` on the run. A stand-in told to fail requests under load fails a step, which the gate
catches; a load stopped by a signal keeps its measured steps and resumes at the step it reached."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import jsonschema
import pytest
from stackhelp import REPO, env, make_site, up

from pdrepro.launch.stack import record
from pdrepro.rundir import loadstate, memberrecord
from pdrepro.rundir.loadsummary import LoadSummary
from pdrepro.scenario import schemagen

LENGTH, PROMPTS = 1024, 6


@pytest.fixture
def box(tmp_path):
    made = make_site(tmp_path)
    dataset = tmp_path / "sharegpt.json"
    dataset.write_text('[{"id": "x", "conversations": [{"from": "human", "value": "hello"}]}]')
    made.update(dataset=dataset, out=tmp_path / "load")
    yield made
    if record.path(made["run"]).is_file():
        subprocess.run([sys.executable, "-m", "pdrepro", "stack", "down", str(made["run"]), "--grace", "1"],
                       env=env(), capture_output=True, timeout=60)


def _stack_up(box, **standin: str) -> None:
    started = up(box, "--server-arg=--enable-metrics", env_=env(**standin))
    assert started.returncode == 0, started.stdout + started.stderr


def _load_argv(box, *extra: str) -> list[str]:
    return [sys.executable, "-m", "pdrepro", "load", "--scenario", str(box["tmp"] / "onebox-test.yaml"),
            "--router", f"http://127.0.0.1:{box['router']}", "--prefill", f"http://127.0.0.1:{box['prefill']}",
            "--decode", f"http://127.0.0.1:{box['decode']}", "--model", str(box["model"]),
            "--dataset", str(box["dataset"]), "--bench-in-place", "--logs-from", str(box["run"] / "logs"),
            "--metrics", "--wait-timeout", "20", "--prompt-lens", str(LENGTH), "--prompts", str(PROMPTS),
            "--out", str(box["out"]), *extra]


def _load(box, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(_load_argv(box, *extra), capture_output=True, text=True, env=env(), timeout=180, cwd=REPO)


def _check(box) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pdrepro", "check", str(box["out"])], capture_output=True, text=True,
                          env=env(), timeout=120, cwd=REPO)


def _summary(box) -> LoadSummary:
    data = json.loads((box["out"] / "load-summary.json").read_text())
    jsonschema.validate(data, json.loads((schemagen.shipped_dir() / "load-summary.schema.json").read_text()))
    return LoadSummary.model_validate(data)


def test_each_step_is_measured_accounted_and_passes_the_gates(box):
    _stack_up(box)
    done = _load(box, "--concurrency", "1,2,4")
    assert done.returncode == 0, done.stdout + done.stderr
    summary = _summary(box)
    assert [(s.name, s.concurrency, s.status) for s in summary.steps] == [("c1", 1, "done"), ("c2", 2, "done"),
                                                                        ("c4", 4, "done")]
    # The whole-job line before each step; its ETA once a step has run to its end.
    jobs = [line for line in done.stdout.splitlines() if line.startswith("member ")]
    assert [line.split(", elapsed")[0] for line in jobs] == [f"member {n} of 3 (c{c})" for n, c in ((1, 1), (2, 2),
                                                                                                     (3, 4))]
    assert jobs[0].endswith("ETA unknown until the first ends") and jobs[2].endswith("(from the 2 members done)")
    # The bench client's own output is in the run's log, one header per step, not on the console.
    client_log = (box["out"] / "logs" / "bench-client.log").read_text()
    assert [line for line in client_log.splitlines() if line.startswith("==== ")] == [
        "==== step c1", "==== step c2", "==== step c4"]
    # Throughput per step, from the client's own record of it.
    for step in summary.steps:
        raw = json.loads((box["out"] / "steps" / step.name / "bench" / f"result-{LENGTH}.jsonl").read_text())
        assert step.requests_per_s == raw["completed"] / raw["duration"] and step.requests_per_s > 0
    # Each step records whose member it is (the load's own id, in its state) and its name; none is contradicted.
    state = loadstate.read(box["out"])
    assert state is not None and state.run_id is not None and summary.members == []
    for step in summary.steps:
        rec = memberrecord.read(box["out"] / "steps" / step.name)
        assert rec is not None and (rec.kind, rec.composite, rec.member) == ("load", state.run_id, step.name)
    for step in summary.steps:
        result = json.loads((box["out"] / "steps" / step.name / "bench" / f"result-{LENGTH}.jsonl").read_text())
        assert result["max_concurrency"] == step.concurrency and result["random_input_len"] == LENGTH
        assert step.completed == PROMPTS and step.failed_requests == 0
        # Every request the client completed is found in the prefill log inside the step's window, and none more:
        # the warm-up left out, the other steps' requests not counted.
        assert step.logged_requests == PROMPTS and step.transfer_samples == PROMPTS
        assert step.retries == 0
        assert step.transfer_ms_p50 is not None and step.transfer_ms_p99 is not None
        assert step.ttft_ms_p99 is not None and step.ttft_ms_p99 >= step.ttft_ms_p50  # type: ignore[operator]
        # /metrics over the step: the requests plus the warm-up, none failed.
        prefill = step.servers["prefill"]
        assert prefill.generate_failed == 0 and prefill.requests == PROMPTS + 1
        assert step.servers["decode"].generate_responses == PROMPTS + 1
    report = (box["out"] / "report.md").read_text()
    assert "| c4 | 4 | inf | 0 of 6 |" in report and (box["out"] / "plots" / "load.png").stat().st_size > 0
    judged = _check(box)
    assert judged.returncode == 0, judged.stdout + judged.stderr
    assert judged.stdout.count("transfer_tail") == 3 and "FAIL" not in judged.stdout


def test_a_step_whose_requests_fail_is_caught_by_the_gate(box):
    # The prefill answers 500 to a request while another is in flight: concurrency 1 never, 2 and up do.
    _stack_up(box, STANDIN_FAIL_ABOVE="1", STANDIN_TRANSFER_GBPS="0.05")
    done = _load(box, "--concurrency", "1,2")
    assert done.returncode == 0, done.stdout + done.stderr  # both measured; the failures are the finding
    summary = _summary(box)
    c1, c2 = summary.steps
    assert c1.failed_requests == 0 and c1.servers["prefill"].generate_failed == 0
    assert c2.failed_requests is not None and c2.failed_requests > 0
    assert c2.completed == PROMPTS - c2.failed_requests
    assert c2.first_error is not None and "HTTP 502" in c2.first_error
    # The prefill server's own count of the answers it failed, from /metrics over the step.
    assert c2.servers["prefill"].generate_failed is not None and c2.servers["prefill"].generate_failed > 0
    judged = _check(box)
    assert judged.returncode == 1, judged.stdout + judged.stderr
    assert f"FAIL step c2: failed requests (bench client) {c2.failed_requests}" in judged.stdout
    assert "FAIL step c2: failed /generate answers" in judged.stdout
    assert "FAIL step c1" not in judged.stdout
    assert "FAIL: failed_requests, server_failed" in (box["out"] / "report.md").read_text()


def _wait_for(path: Path, what, within_s: float = 60.0) -> dict:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            data = json.loads(path.read_text())
            if what(data):
                return data
        except (OSError, ValueError):
            pass
        time.sleep(0.05)
    raise AssertionError(f"{path}: never reached the state waited for")


def test_a_stopped_load_keeps_its_steps_and_resumes_at_the_step_it_reached(box):
    # Slow transfers (about 0.24 s a request at 1024 tokens): the second step runs long enough to be stopped in.
    _stack_up(box, STANDIN_TRANSFER_GBPS="0.05")
    proc = subprocess.Popen(_load_argv(box, "--concurrency", "1,2"), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=env(), cwd=REPO)
    try:
        state = box["out"] / "load-state.json"
        _wait_for(state, lambda d: d["steps"].get("c2", {}).get("status") == "unfinished")
        proc.send_signal(signal.SIGTERM)
        output, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM, output
    data = json.loads(state.read_text())
    assert data["steps"]["c1"]["status"] == "done"
    assert data["steps"]["c2"]["status"] == "unfinished" and "SIGTERM" in data["steps"]["c2"]["reason"]
    kept = box["out"] / "steps" / "c1" / "bench" / f"result-{LENGTH}.jsonl"
    first = kept.read_text()
    assert not (box["out"] / "steps" / "c2" / "bench" / f"result-{LENGTH}.jsonl").exists()
    # What a client cut short leaves where the step's result belongs: set aside on resume, never counted.
    cut = box["out"] / "steps" / "c2" / "bench" / f"result-{LENGTH}.jsonl"
    cut.write_text('{"completed": 3, "random_input_len": 1024, "ttfts": [0.1,')
    again = _load(box, "--concurrency", "1,2")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "1 step(s) already measured (c1)" in again.stdout + again.stderr
    assert "member 2 of 2 (c2)" in again.stdout  # the step measured before counts in the position
    assert kept.read_text() == first  # not run again
    assert (cut.parent / f"result-{LENGTH}.jsonl.invalid").read_text().startswith('{"completed": 3')
    summary = _summary(box)
    assert [(s.name, s.status, s.failed_requests) for s in summary.steps] == [("c1", "done", 0), ("c2", "done", 0)]
    assert _check(box).returncode == 0


def test_another_plan_in_the_same_folder_is_refused_in_one_line(box):
    _stack_up(box)
    assert _load(box, "--concurrency", "1").returncode == 0
    refused = _load(box, "--concurrency", "1,2")
    lines = refused.stderr.strip().splitlines()
    assert refused.returncode == 2 and len(lines) == 1 and "Traceback" not in refused.stderr, refused.stderr
    assert "load-state.json" in lines[0] and "give another --out" in lines[0]
