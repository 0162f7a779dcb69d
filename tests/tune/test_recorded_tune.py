"""The first tune measured on a GPU (tests/recorded/h200-tune-0.5b-*, see its SOURCE): `pdrepro tune` one knob at a
time on one H200, stopped by SIGTERM in its third run. Held here: judged on a copy, it names no best while five
runs measured nothing, and says of each why (the one the signal ended as stopped, not as a failed setting); the
README's table is what `tune --collect` gives with the engine alone beside the runs; its phase times are the
servers' own request lines; and the state a rerun resumes from is the one the machine left."""

from __future__ import annotations

import json
import re
import shutil
import statistics
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest
from runkinds import tree_hash
from stackhelp import env

from pdrepro.launch.stack import record
from pdrepro.rundir import armsstate, tuneplan
from pdrepro.rundir.tunesummary import TuneSummary

REPO = Path(__file__).resolve().parents[2]
RECORDED = REPO / "tests" / "recorded" / "h200-tune-0.5b-mooncake-tcp-sglang-0.5.15.post1"
TUNE = RECORDED / "tune"
MEASURED = ["baseline-1", "s1"]
NOTHING = ["baseline-2", "baseline-3", "s2", "s3", "s4"]


def _collect(run: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pdrepro", "tune", "--collect", str(run)], env=env(), cwd=REPO,
                          capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def judged(tmp_path_factory):
    """Two copies collected: as the machine left the folder, and with the engine alone at RUN/engine-ceiling."""
    out = {}
    for name, engine in (("plain", False), ("engine", True)):
        run = tmp_path_factory.mktemp(name) / "tune"
        shutil.copytree(TUNE, run)
        if engine:
            shutil.copytree(RECORDED / "engine-alone", run / "engine-ceiling")
        before = {f: tree_hash(run / f) for f in MEASURED + ["s2"]}
        done = _collect(run)
        summary = TuneSummary.model_validate_json((run / "tune-summary.json").read_text())
        out[name] = {"run": run, "done": done, "summary": summary, "before": before}
    return out


def test_no_best_is_named_while_five_runs_measured_nothing_and_each_says_why(judged):
    j = judged["plain"]
    assert j["done"].returncode == 1, j["done"].stderr[-2000:]
    summary = j["summary"]
    assert summary.best is None and summary.unmeasured == NOTHING
    runs = {r.folder: r for s in summary.settings for r in s.runs}
    assert [f for f in MEASURED if runs[f].passed] == MEASURED
    assert "stopped by a signal" in (runs["s2"].problem or "") and "143" in (runs["s2"].problem or "")
    assert all("not run yet" in (runs[f].problem or "") for f in ("baseline-2", "baseline-3", "s3", "s4"))
    report = (j["run"] / "tune-report.md").read_text()
    assert "Best: not judged yet. 5 of 7 run(s) measured nothing (baseline-2, baseline-3, s2, s3, s4)" in report
    assert (j["run"] / "best-overlay.yaml").read_text().rstrip().endswith("{}")
    # Judging writes beside the runs, never into one.
    assert {f: tree_hash(j["run"] / f) for f in j["before"]} == j["before"]


def _readme_table() -> dict[int, list[float]]:
    rows = {}
    for line in (RECORDED / "README.md").read_text().splitlines():
        m = re.match(r"^\| (\d+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \|$", line)
        if m:
            rows[int(m[1])] = [float(x) for x in m.groups()[1:]]
    return rows


def test_the_readme_table_is_what_collect_gives_with_the_engine_alone(judged):
    summary = judged["engine"]["summary"]
    assert summary.engine_ceiling == "engine-ceiling/result.json (tcp)"
    table = _readme_table()
    assert sorted(table) == [length.prompt_len for length in summary.lengths] == [4096, 16384]
    for length in summary.lengths:
        fig = {f.setting: f for f in length.ranking}
        engine = length.engine_alone
        assert engine is not None and len(engine.runs) == 1 and engine.spread_GB_s is None
        want = [round(engine.mean_GB_s, 3), round(fig["baseline"].bandwidth_GB_s, 3),
                round(fig["baseline"].of_engine, 2), round(fig["s1"].bandwidth_GB_s, 3), round(fig["s1"].of_engine, 2)]
        assert table[length.prompt_len] == want, length.prompt_len
    # The baseline's figure is baseline-1's own summary, as the sweep wrote it on the machine.
    stored = {r["prompt_len"]: r["bandwidth_GB_s"] for r in
              json.loads((TUNE / "baseline-1" / "summary.json").read_text())["rows"]}
    for length in summary.lengths:
        assert length.baseline.runs_GB_s == [pytest.approx(stored[length.prompt_len], abs=1e-4)]


def _median(log: Path, length: int, key: str) -> float:
    lines = [line for line in log.read_text().splitlines() if f"input_len={length}," in line and "type=prefill" in line]
    assert len(lines) == 11  # the warm-up request and the ten measured
    return statistics.median(float(re.search(rf"{key}=([\d.]+)", line)[1]) for line in lines[1:])


def test_the_phase_times_in_the_readme_are_the_servers_request_lines(judged):
    text = " ".join((RECORDED / "README.md").read_text().split())
    log = TUNE / "baseline-1" / "logs" / "prefill.log"
    engine = {(r["prompt_len"], r["layout"]): statistics.median(r["seconds"]) * 1e3 for r in
              json.loads((RECORDED / "engine-alone" / "result.json").read_text())["rows"]}
    for length in (4096, 16384):
        total_mib, speed_gib = _median(log, length, "transfer_total"), _median(log, length, "transfer_speed")
        ms = total_mib * 2**20 / (speed_gib * 2**30) * 1e3  # SGLang logs MB and GB/s that are MiB and GiB/s
        assert f"{ms:.1f} ms" in text and f"{engine[(length, 'layers')]:.1f} ms" in text
    assert f"bootstrap took {_median(log, 4096, 'bootstrap_duration'):.1f} ms" in text
    assert f"queueing {_median(log, 4096, 'queue_duration'):.1f} ms" in text


def _at(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp)


def test_the_state_a_rerun_resumes_from_is_the_one_the_machine_left():
    plan = tuneplan.read(TUNE)
    state = armsstate.read(TUNE)
    assert plan is not None and state is not None and state.label == plan.label
    status = {a.name: (a.status, a.exit) for a in state.arms}
    assert status == {"baseline-1": ("done", 0), "s1": ("done", 0), "s2": ("failed", 143), "baseline-2": ("pending", None),
                      "s3": ("pending", None), "s4": ("pending", None), "baseline-3": ("pending", None)}
    # Written before "stopped" existed: read as what it was, a run a signal ended, which a rerun starts again.
    assert state.arm("s2").interrupted() and not state.arm("s1").interrupted()
    console = (RECORDED / "console" / "tune.console.txt").read_text()
    assert "stack up: interrupted; stopping what was started" in console
    assert "pdrepro stack: interrupted (SIGTERM); results written so far are kept." in console
    # Every run on one boot, one after the other: s1's stack went down before s2's started, s2's down at the end.
    stacks = {f: record.read(TUNE / f) for f in ("baseline-1", "s1", "s2")}
    boot = (RECORDED / "boot_id.txt").read_text().strip()
    assert {s.boot_id for s in stacks.values()} == {boot}
    assert _at(stacks["baseline-1"].stopped_at) < _at(stacks["s1"].stopped_at) < _at(stacks["s2"].stopped_at)
    assert [p.role for p in stacks["s2"].processes] == ["prefill", "decode"]
    # The README's run times: from the tune's start (jobs.out) to each stack's stop.
    jobs = (RECORDED / "console" / "jobs.out").read_text()
    start = re.search(r"(\d\d:\d\d:\d\d) tune for up to", jobs)[1]
    t0 = _at(stacks["baseline-1"].stopped_at).replace(hour=int(start[:2]), minute=int(start[3:5]), second=int(start[6:]))
    first = (_at(stacks["baseline-1"].stopped_at) - t0).seconds
    second = (_at(stacks["s1"].stopped_at) - _at(stacks["baseline-1"].stopped_at)).seconds
    text = " ".join((RECORDED / "README.md").read_text().split())
    assert f"baseline-1 {first // 60} min {first % 60} s and s1 {second // 60} min {second % 60} s" in text


def test_the_guide_says_what_the_recording_holds(judged):
    page = " ".join((REPO / "docs" / "guide" / "tune.md").read_text().split())
    readme = " ".join((RECORDED / "README.md").read_text().split())
    times = re.search(r"baseline-1 (\d+ min \d+ s) and s1 (\d+ min \d+ s)", readme)
    assert times and f"baseline-1 took {times[1]} and s1 {times[2]}" in page
    table = _readme_table()
    assert (f"reaches {table[4096][2]:.2f} of the engine at 4096 tokens and {table[16384][2]:.2f} at 16384" in page
            and f"a thread pool of 4 reached {table[4096][4]:.2f} at 4096" in page)
    assert judged["plain"]["summary"].unmeasured == NOTHING and "lists the five runs still to run" in page
