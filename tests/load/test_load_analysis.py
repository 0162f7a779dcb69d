"""The load analysis on real upstream outputs: the recorded H200 sweep's 4096-token length (SGLang 0.5.15.post1,
Mooncake over TCP, concurrency 1: tests/recorded/h200-ab-mooncake-tcp-vs-nixl-sglang-0.5.15.post1/ab/mooncake_tcp)
is a load step c1 as it stands. Laid out as a load run (a fixture: the recorded files copied unchanged, the
step's window the one its sweep-state.json records), its transfer p50/p99 and TTFT p50/p99 are the sweep's own
figures for that length, and the /metrics difference the sweep kept gives its failure accounting. A second step
built from the same log lines (re-timed into its own window, one request's speed cut) shows a tail the gate
fails, and a retried request counted."""

from __future__ import annotations

import datetime as dt
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pdrepro.analysis.load import compute_load_summary
from pdrepro.rundir import RunDir, loadstate
from pdrepro.rundir.loadstate import LoadPlan, LoadState, LoadStep, StepRecord
from pdrepro.scenario.model import load_scenario
from pdrepro.verdicts.load import step_checks

REPO = Path(__file__).resolve().parents[2]
ARM = REPO / "tests/recorded/h200-ab-mooncake-tcp-vs-nixl-sglang-0.5.15.post1/ab/mooncake_tcp"
L = 4096
# The second step's window: well after the recorded run, its lines re-timed into it.
SHIFT_S = 3600.0


def _window(record: dict) -> tuple[float, float]:
    end = dt.datetime.strptime(record["at"], "%Y-%m-%dT%H:%M:%S%z").timestamp()
    return end - record["seconds"], end


def _retimed(lines: list[str], shift: float) -> list[str]:
    out = []
    for line in lines:
        entry = float(re.search(r"entry_time=([0-9.]+)", line).group(1))  # type: ignore[union-attr]
        line = line.replace(f"entry_time={entry:.3f}", f"entry_time={entry + shift:.3f}")
        out.append(re.sub(r"rid=([0-9a-f]+)", lambda m: f"rid={m.group(1)[::-1]}", line))
    return out


@pytest.fixture
def run(tmp_path) -> RunDir:
    scenario = load_scenario(ARM / "scenario.yaml")
    top = RunDir(tmp_path / "load")
    (top.root / "logs").mkdir(parents=True)
    (top.root / "scenario.yaml").write_text((ARM / "scenario.yaml").read_text())
    start, end = _window(json.loads((ARM / "sweep-state.json").read_text())["lengths"][str(L)])
    prefill = (ARM / "logs/prefill.log").read_text().splitlines()
    ours = [line for line in prefill if f"input_len={L}," in line and "type=prefill" in line]
    assert len(ours) == 11  # the warm-up and the ten requests
    # Step c2: the same requests again, an hour later; the fifth one's transfer ten times slower, the sixth
    # retried twice (SGLang's #retries field).
    tail = _retimed(ours, SHIFT_S)
    tail[5] = tail[5].replace("transfer_speed=1.", "transfer_speed=0.1")
    tail[6] = tail[6].replace("#retries=0", "#retries=2")
    (top.logs_dir / "prefill.log").write_text("\n".join(prefill + tail) + "\n")
    shutil.copy(ARM / "logs/decode.log", top.logs_dir / "decode.log")
    steps = (LoadStep(concurrency=1), LoadStep(concurrency=2))
    for step in steps:
        folder = loadstate.step_run(top.root, step)
        (folder.bench_dir).mkdir(parents=True)
        text = (ARM / f"bench/result-{L}.jsonl").read_text()
        if step.concurrency != 1:  # the recorded run's concurrency is 1; step c2 says its own (json keeps Infinity)
            record = json.loads(text)
            record["max_concurrency"] = step.concurrency
            text = json.dumps(record) + "\n"
        folder.bench_file(L).write_text(text)
        folder.metrics_dir.mkdir()
        for role in ("prefill", "decode"):
            shutil.copy(ARM / f"metrics/{role}-{L}.prom", folder.metrics_file(role, L))
    plan = LoadPlan(scenario_fingerprint=scenario.fingerprint, prompt_len=L, num_prompts=10, steps=steps)
    state = LoadState(plan=plan, steps={
        "c1": StepRecord(status="done", started_at=start, ended_at=end),
        "c2": StepRecord(status="done", started_at=start + SHIFT_S, ended_at=end + SHIFT_S)})
    loadstate.write(top.root, state)
    return top


def test_a_recorded_length_read_as_a_step_gives_the_sweeps_own_figures(run):
    scenario = load_scenario(run.scenario_file)
    summary = compute_load_summary(run, scenario)
    c1 = summary.steps[0]
    row = next(r for r in json.loads((ARM / "summary.json").read_text())["rows"] if r["prompt_len"] == L)
    assert c1.logged_requests == row["logged_requests"] == 10 and c1.transfer_samples == row["transfer_samples"]
    assert c1.transfer_ms_p50 == pytest.approx(row["transfer_ms_median"])
    assert c1.transfer_ms_p99 == pytest.approx(row["transfer_ms_p99"])
    assert c1.ttft_ms_p50 == pytest.approx(row["ttft_ms_median"]) and c1.ttft_ms_p99 == pytest.approx(row["ttft_ms_p99"])
    assert c1.failed_requests == 0 and c1.retries == 0
    # The recorded /metrics difference over the length: ten requests and the warm-up, none failed.
    assert c1.servers["prefill"].generate_responses == 11 and c1.servers["prefill"].generate_failed == 0
    assert c1.servers["prefill"].session_recoveries == 0 and c1.servers["decode"].retracted == 0
    assert [r.verdict for r in step_checks(summary, c1)] == ["PASS"] * 4


def test_a_tail_past_three_times_the_median_fails_its_step_only(run):
    summary = compute_load_summary(run, load_scenario(run.scenario_file))
    c1, c2 = summary.steps
    # c2's window holds its own eleven lines only (c1's are an hour earlier): the warm-up left out, ten counted.
    assert c2.logged_requests == 10 and c2.retries == 2 and c2.retried_requests == 1
    assert c2.transfer_p99_over_p50 is not None and c2.transfer_p99_over_p50 > 3
    verdicts = {r.name: r.verdict for r in step_checks(summary, c2)}
    assert verdicts == {"step_measured": "PASS", "failed_requests": "PASS", "server_failed": "PASS",
                        "transfer_tail": "FAIL"}
    assert c1.transfer_p99_over_p50 is not None and c1.transfer_p99_over_p50 < 1.2


def test_check_judges_the_run_and_writes_nothing_into_it(run):
    before = {p: p.stat().st_mtime_ns for p in run.root.rglob("*")}
    judged = subprocess.run([sys.executable, "-m", "pdrepro", "check", str(run.root)], capture_output=True, text=True,
                            cwd=REPO, timeout=120)
    assert judged.returncode == 1, judged.stdout + judged.stderr
    assert "FAIL step c2: transfer time p99/p50" in judged.stdout and "FAIL step c1" not in judged.stdout
    # A looser bound, as --thresholds lays it over the scenario's, passes the same run.
    loose = run.root.parent / "loose.yaml"
    loose.write_text("max_transfer_p99_over_p50: 10\n")
    relaxed = subprocess.run([sys.executable, "-m", "pdrepro", "check", str(run.root), "--thresholds", str(loose)],
                             capture_output=True, text=True, cwd=REPO, timeout=120)
    assert relaxed.returncode == 0, relaxed.stdout + relaxed.stderr
    assert "BOUND max_transfer_p99_over_p50: loosened, 10 instead of the run's 3" in relaxed.stdout
    assert {p: p.stat().st_mtime_ns for p in run.root.rglob("*")} == before


def test_a_step_not_measured_fails_and_no_figures_are_made_up(run):
    state = loadstate.read(run.root)
    assert state is not None
    loadstate.write(run.root, state.with_step("c2", StepRecord(status="unfinished", started_at=1.0, ended_at=2.0,
                                                              reason="stopped by SIGTERM")))
    summary = compute_load_summary(run, load_scenario(run.scenario_file))
    c2 = summary.steps[1]
    assert c2.transfer_ms_p50 is None and c2.failed_requests is None
    checks = step_checks(summary, c2)
    assert [(r.name, r.verdict) for r in checks] == [("step_measured", "FAIL")]
    assert "SIGTERM" in checks[0].detail


def test_analyze_writes_the_summary_report_and_plot_of_a_load_run(run):
    done = subprocess.run([sys.executable, "-m", "pdrepro", "analyze", str(run.root)], capture_output=True, text=True,
                          cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    data = json.loads((run.root / "load-summary.json").read_text())
    assert [s["name"] for s in data["steps"]] == ["c1", "c2"] and str(run.root) not in json.dumps(data)
    report = (run.root / "report.md").read_text()
    assert "| c1 | 1 | inf | 0 of 10 |" in report and "FAIL: transfer_tail" in report
    assert (run.root / "plots" / "load.png").stat().st_size > 0


def test_the_default_tail_bound_keeps_recorded_fingerprints_and_a_set_one_changes_it():
    recorded = load_scenario(ARM / "scenario.yaml")  # written before the bound existed
    assert recorded.thresholds.max_transfer_p99_over_p50 == 3.0
    assert recorded.fingerprint == json.loads((ARM / "summary.json").read_text())["scenario_fingerprint"]
    other = recorded.with_thresholds(recorded.thresholds.model_copy(update={"max_transfer_p99_over_p50": 4.0}))
    assert other.fingerprint != recorded.fingerprint
