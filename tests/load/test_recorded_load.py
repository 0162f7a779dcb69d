"""The first load sweep on a GPU (tests/recorded/h200-load-0.5b-*, see its SOURCE): `pdrepro load` at
concurrency 1, 2, 4, 8 against a one-box stack on an H200, cut short in its third step when the GPU time ran
out. Judged here on copies as a user would: the README's table is what `pdrepro analyze` derives from the raw
files, the two measured steps pass their gates, `check` fails the run naming the unfinished and the pending
step and writes nothing, and the stack record left behind by the lost machine signals nothing here."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from runkinds import tree_hash

RECORDED = Path(__file__).resolve().parents[1] / "recorded" / "h200-load-0.5b-mooncake-tcp-sglang-0.5.15.post1"


def _pdrepro(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pdrepro", *args], capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def analyzed(tmp_path_factory):
    run = tmp_path_factory.mktemp("recorded-load") / "load"
    shutil.copytree(RECORDED / "load", run)
    done = _pdrepro("analyze", str(run))
    return run, done


def test_the_readme_table_is_what_the_analysis_derives(analyzed):
    run, done = analyzed
    summary = json.loads((run / "load-summary.json").read_text())
    steps = {s["name"]: s for s in summary["steps"]}
    rows = re.findall(r"^\| (c\d) \| (\d+) \| (\d+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \|$",
                      (RECORDED / "README.md").read_text(), re.M)
    assert [r[0] for r in rows] == ["c1", "c2"]
    for name, completed, failed, *figures in rows:
        s = steps[name]
        assert (s["status"], s["completed"], s["failed_requests"]) == ("done", int(completed), int(failed))
        want = [round(s["ttft_ms_p50"], 1), round(s["ttft_ms_p99"], 1), round(s["transfer_ms_p50"], 1),
                round(s["transfer_ms_p99"], 1), round(s["transfer_p99_over_p50"], 2)]
        assert [float(f) for f in figures] == want, name
        # Every request of the step was found in the prefill's log, each with its transfer time.
        assert s["logged_requests"] == s["transfer_samples"] == 32
        for role in ("prefill", "decode"):
            assert s["servers"][role]["generate_failed"] == 0
    assert [steps[n]["status"] for n in ("c4", "c8")] != ["done", "done"]


def test_check_fails_the_run_naming_the_steps_not_measured_and_writes_nothing(analyzed):
    run = analyzed[0]
    before = tree_hash(run)
    checked = _pdrepro("check", str(run))
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert tree_hash(run) == before
    rows = {tuple(line.split()[:2]): line.split()[-1] for line in checked.stdout.splitlines()
            if re.match(r"^\w+\s+c\d\s", line)}
    for step in ("c1", "c2"):
        for gate in ("step_measured", "failed_requests", "server_failed", "transfer_tail"):
            assert rows[(gate, step)] == "PASS", (gate, step)
    assert rows[("step_measured", "c4")] == rows[("step_measured", "c8")] == "FAIL"
    assert "step c4: unfinished" in checked.stdout and "step c8: pending" in checked.stdout


def test_the_stack_record_of_the_lost_machine_signals_nothing_here(tmp_path):
    stack = tmp_path / "stack"
    shutil.copytree(RECORDED / "stack", stack)
    rec = json.loads((stack / "stack.json").read_text())
    assert rec["stopped_at"] is None and rec["boot_id"] == (RECORDED / "boot_id.txt").read_text().strip()
    down = _pdrepro("stack", "down", str(stack))
    assert down.returncode == 0, down.stdout + down.stderr
    assert "started before this host last booted" in down.stdout + down.stderr
    assert "stopped (SIG" not in down.stdout + down.stderr
