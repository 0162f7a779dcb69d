"""`pdrepro compare`: a comparison scenario's two configurations run one after the other on this box, as a
user runs it (a subprocess), against the stand-in servers and the stand-in bench client
(tests/fixtures/standin): stack up, sweep, stack down per configuration, then analyze and check; resumed
at the configuration it reached."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from runkinds import tree_hash
from stackhelp import REPO, decoy_server, env, free_ports, kill

from pdrepro.launch.stack import ownership, record

SCENARIO = REPO / "src/pdrepro/scenarios/a10-qwen25-7b-onebox-rate4.yaml"
SCENARIO_RATE1 = REPO / "src/pdrepro/scenarios/a10-qwen25-7b-onebox-rate1.yaml"
PORTS = "ports: {prefill: 30000, decode: 30001, bootstrap: 8998, router: 8000, regular: [30000, 30001]}"


@pytest.fixture
def box(tmp_path):
    """The shipped one-box comparison on free ports and cut to a few prompts, a model folder, a dataset, and
    a `python` on PATH that is this interpreter (the sweep runs the bench client as `python -m ...`)."""
    prefill, decode, bootstrap, router = free_ports(4)
    ports = (f"ports: {{prefill: {prefill}, decode: {decode}, bootstrap: {bootstrap}, router: {router}, "
             f"regular: [{prefill}, {decode}]}}")
    text = SCENARIO.read_text()
    assert PORTS in text and "num_prompts: 200" in text and "request_rate: 4.0" in text
    text = (text.replace(PORTS, ports).replace("num_prompts: 200", "num_prompts: 5")
            .replace("request_rate: 4.0", "request_rate: 50.0"))
    scenario = tmp_path / "comparison.yaml"
    scenario.write_text(text)
    # The rate 1.0 variant on the same ports: one stack serves both.
    text = SCENARIO_RATE1.read_text()
    assert PORTS in text and "num_prompts: 50" in text and "request_rate: 1.0" in text
    text = (text.replace(PORTS, ports).replace("num_prompts: 50", "num_prompts: 3")
            .replace("request_rate: 1.0", "request_rate: 40.0"))
    rate1 = tmp_path / "comparison-rate1.yaml"
    rate1.write_text(text)
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    dataset = tmp_path / "sharegpt.json"
    dataset.write_text('[{"id": "x", "conversations": [{"from": "human", "value": "hello"}]}]')
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python").write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    (bin_dir / "python").chmod(0o755)
    made = {"scenario": scenario, "rate1": rate1, "model": model, "dataset": dataset, "run": tmp_path / "run",
            "path": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    yield made
    for name in ("1P1D", "2-regular"):
        if record.path(made["run"] / name).is_file():
            subprocess.run([sys.executable, "-m", "pdrepro", "stack", "down", str(made["run"] / name), "--grace", "1"],
                           env=env(), capture_output=True, timeout=60)


def compare(box, *extra, timeout=180, **env_extra) -> subprocess.CompletedProcess:
    argv = [sys.executable, "-m", "pdrepro", "compare", "--scenario", str(box["scenario"]), "--out", str(box["run"]),
            "--model", str(box["model"]), "--dataset", str(box["dataset"]), "--gpus", "0", "--force-tcp",
            "--sweep-args=--wait-timeout 20 --no-transport-proof", *extra]
    return subprocess.run(argv, capture_output=True, text=True, env=env(PATH=box["path"], **env_extra),
                          timeout=timeout, cwd=REPO)


def _state(run: Path) -> dict[str, str]:
    data = json.loads((run / "arms-state.json").read_text())
    return {a["configuration"]: a["status"] for a in data["arms"]}


def _nothing_left(run: Path) -> None:
    for name in ("1P1D", "2-regular"):
        rec = record.read(run / name)
        assert rec.stopped_at is not None
        assert ownership.marked(rec.stack_id) == [], f"{name}: a process of its stack still runs"


def test_both_configurations_run_one_after_the_other_and_are_compared(box):
    decoy = decoy_server(free_ports(1)[0])
    try:
        out = compare(box)
        assert out.returncode == 0, out.stdout + out.stderr
        run = box["run"]
        assert _state(run) == {"1P1D": "done", "2-regular": "done"}
        # The disaggregated stack first, then the regular one, each in its own folder with its raw files.
        assert out.stdout.index("== arm 1P1D: stack up") < out.stdout.index("== arm 2-regular: stack up")
        assert record.read(run / "1P1D").stack == "disaggregated" and record.read(run / "2-regular").stack == "regular"
        for name in ("1P1D", "2-regular"):
            bench = run / name / "bench" / "result-2048.jsonl"
            result = json.loads(bench.read_text().splitlines()[-1])
            assert result["completed"] == 5 and result["random_input_len"] == 2048
            assert (run / name / "logs" / "router.log").is_file()
        assert "--worker-urls" in (run / "2-regular" / "logs" / "router.log").read_text()
        summary = json.loads((run / "summary.json").read_text())
        assert set(summary["configurations"]) == {"1P1D", "2-regular"}
        assert all(summary["configurations"][n]["measured"]["completed"] == 5 for n in ("1P1D", "2-regular"))
        report = (run / "report.md").read_text()
        assert "1P1D" in report and "2-regular" in report
        _nothing_left(run)
        assert decoy.poll() is None, "compare stopped a process it did not start"

        # Judged again, it reads only: check's verdict and status, nothing written into the run.
        before = tree_hash(run)
        checked = subprocess.run([sys.executable, "-m", "pdrepro", "check", str(run)], capture_output=True, text=True,
                                 env=env(), timeout=120, cwd=REPO)
        judged = subprocess.run([sys.executable, "-m", "pdrepro", "compare", "--judge", str(run), "--json"],
                                capture_output=True, text=True, env=env(), timeout=120, cwd=REPO)
        assert judged.returncode == checked.returncode == 0, judged.stderr
        (verdict,) = json.loads(judged.stdout)["members"]  # one schema with check: its runs are members
        assert [c["verdict"] for c in verdict["checks"]] == ["PASS"] * len(verdict["checks"]) and verdict["checks"]
        assert tree_hash(run) == before
        # The run wrote its report; one a person edited since is never written over, refused before a stack starts.
        edited = report + "\nmy notes on this comparison\n"
        (run / "report.md").write_text(edited)
        again = compare(box)
        assert again.returncode == 2 and f"{run / 'report.md'}: not written by pdrepro compare" in again.stderr, \
            again.stdout + again.stderr
        assert "== arm" not in again.stdout and (run / "report.md").read_text() == edited
    finally:
        kill(decoy)


def test_an_interrupted_comparison_resumes_at_the_configuration_it_reached(box):
    failed = compare(box, STANDIN_EXIT_AT_START="regular")
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert _state(box["run"]) == {"1P1D": "done", "2-regular": "failed"}
    first = (box["run"] / "1P1D" / "bench" / "result-2048.jsonl").read_text()
    assert not (box["run"] / "summary.json").exists()

    again = compare(box)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "arm 1P1D: done already" in again.stdout and "arm 1P1D: stack up" not in again.stdout
    assert (box["run"] / "1P1D" / "bench" / "result-2048.jsonl").read_text() == first  # not run again
    assert _state(box["run"]) == {"1P1D": "done", "2-regular": "done"}
    _nothing_left(box["run"])


def test_a_run_of_another_scenario_is_refused_in_one_line(box):
    box["run"].mkdir()
    (box["run"] / "arms-state.json").write_text(json.dumps({
        "schema_version": 1, "label": "comparison other 0123456789abcdef",
        "arms": [{"name": "1P1D", "configuration": "1P1D"}, {"name": "2-regular", "configuration": "2-regular"}]}))
    out = compare(box)
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert "comparison other" in out.stderr and "Traceback" not in out.stderr
    assert not (box["run"] / "1P1D").exists()


def test_a_kv_sweep_scenario_is_refused_in_one_line(box):
    out = compare(box, "--scenario", "onebox-qwen25-0.5b")  # a second --scenario, not a comparison
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert "comparison" in out.stderr and not box["run"].exists()


def test_both_rates_share_each_stack_and_keep_a_run_each(box):
    out = compare(box, "--scenario", str(box["rate1"]), timeout=240)
    assert out.returncode == 0, out.stdout + out.stderr
    run = box["run"]
    # One stack start per configuration, two sweeps against it.
    assert out.stdout.count("== arm 1P1D: stack up") == 1 and out.stdout.count("== arm 2-regular: stack up") == 1
    for scenario, length, prompts in (("a10-qwen25-7b-onebox-rate4", 2048, 5), ("a10-qwen25-7b-onebox-rate1", 8192, 3)):
        for name in ("1P1D", "2-regular"):
            result = json.loads((run / scenario / name / "bench" / f"result-{length}.jsonl").read_text().splitlines()[-1])
            assert result["completed"] == prompts
        summary = json.loads((run / scenario / "summary.json").read_text())
        assert summary["scenario"]["name"] == scenario
        assert all(c["measured"]["gpus"] for c in summary["configurations"].values())
        assert "## On one shared GPU" in (run / scenario / "report.md").read_text()
    _nothing_left(run)


def test_scenarios_that_need_other_stacks_are_refused_in_one_line(box):
    other = box["rate1"].read_text().replace("shared_gpu_mem_fraction: 0.35", "shared_gpu_mem_fraction: 0.4")
    box["rate1"].write_text(other)
    out = compare(box, "--scenario", str(box["rate1"]))
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert "launch differ" in out.stderr and not box["run"].exists()


def test_a_run_killed_outright_is_resumed_after_its_leftover_stack_is_stopped(box):
    import signal
    import time

    argv = [sys.executable, "-m", "pdrepro", "compare", "--scenario", str(box["scenario"]), "--out", str(box["run"]),
            "--model", str(box["model"]), "--dataset", str(box["dataset"]), "--gpus", "0", "--force-tcp",
            "--sweep-args=--wait-timeout 20 --no-transport-proof"]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=REPO,
                            env=env(PATH=box["path"], STANDIN_HEALTH_AFTER_S="30"))
    folder = box["run"] / "1P1D"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if record.path(folder).is_file() and any(p.pid for p in record.read(folder).processes):
            break
        time.sleep(0.1)
    proc.send_signal(signal.SIGKILL)  # no clean-up at all: the prefill server it started runs on
    proc.wait()
    left = record.read(folder)
    assert left.stopped_at is None and ownership.marked(left.stack_id)

    again = compare(box)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "1P1D: an earlier run left its stack record unstopped" in again.stdout
    assert ownership.marked(left.stack_id) == []
    assert _state(box["run"]) == {"1P1D": "done", "2-regular": "done"}
    _nothing_left(box["run"])


def test_a_resumed_rate_keeps_the_record_of_the_stack_that_measured_it(box):
    """A rerun starts a configuration's stack again for the rate it lacks; the rate it already holds keeps the
    record of the earlier stack, which measured it (the later one only skipped it)."""
    first = compare(box, "--scenario", str(box["rate1"]), timeout=240)
    assert first.returncode == 0, first.stdout + first.stderr
    run = box["run"]
    rate4, rate1 = run / "a10-qwen25-7b-onebox-rate4" / "2-regular", run / "a10-qwen25-7b-onebox-rate1" / "2-regular"
    earlier = json.loads((rate4 / "stack.json").read_text())["stack_id"]
    assert json.loads((rate1 / "stack.json").read_text())["stack_id"] == earlier
    # As a run whose rate-1.0 sweep of the regular pair was lost: its result gone, the arm not done.
    (rate1 / "bench" / "result-8192.jsonl").unlink()
    state = json.loads((run / "arms-state.json").read_text())
    for arm in state["arms"]:
        if arm["name"] == "2-regular":
            arm.update(status="failed", exit=1, reason="`pdrepro sweep` ended with status 1")
    (run / "arms-state.json").write_text(json.dumps(state))

    again = compare(box, "--scenario", str(box["rate1"]), timeout=240)
    assert again.returncode == 0, again.stdout + again.stderr
    assert again.stdout.count("== arm 2-regular: stack up") == 1 and "== arm 1P1D: stack up" not in again.stdout
    later = json.loads((run / "2-regular" / "stack.json").read_text())["stack_id"]
    assert later != earlier
    assert json.loads((rate4 / "stack.json").read_text())["stack_id"] == earlier
    assert json.loads((rate1 / "stack.json").read_text())["stack_id"] == later
    _nothing_left(run)
