"""Heavy end-to-end signal tests, run by `make signals-e2e` (each a minute or more: whole A/Bs on the stand-in
stack, run twice), skipped in `make test`, which keeps a fast representative of each (tests/test_arms.py, the
sweep's and repro's signal tests). The real `pdrepro ab` with the real sweep and bench client against the
stand-in servers on 127.0.0.1: stopped by a real signal, or killed outright as a machine that went away, just
after an arm measured every length, a rerun finishes the A/B without starting that arm's stack again into its
logs/ (whose new start, serving nothing, made the analysis refuse the log on every rerun)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from signalse2e import HEAVY
from stackhelp import env, make_site, pdrepro, stop_left

from pdrepro.launch.stack import ownership, record
from pdrepro.parsers.serverstart import START_MARKER
from pdrepro.rundir import armsstate

REPO = Path(__file__).resolve().parents[2]
LENGTHS = ["128", "1024", "4096", "16384"]

pytestmark = HEAVY


@pytest.fixture
def site(tmp_path):
    made = make_site(tmp_path)
    yield made
    stop_left(made["run"] / arm for arm in ("mooncake_tcp", "nixl"))


def _argv(site: dict) -> list[str]:
    dataset = site["tmp"] / "sharegpt.json"
    dataset.write_text("[]")
    options = [o for o in site["options"] if o != "--force-tcp"]
    return [sys.executable, "-m", "pdrepro", "ab", *options, "--backends", "mooncake_tcp,nixl", "--dataset",
            str(dataset), "--arm-env", "nixl:UCX_TLS=tcp,cuda_copy", "--arm-env", "nixl:UCX_LOG_LEVEL=info",
            "--stack-args", "--poll 0.1 --grace 5",
            "--sweep-args", "--length-timeout 60 --wait-timeout 30", "--out", str(site["run"])]


def _env(site: dict) -> dict[str, str]:
    bin_dir = site["tmp"] / "bin"  # the bench client's argv starts with `python` (the image's): this one
    bin_dir.mkdir(exist_ok=True)
    if not (bin_dir / "python").exists():
        (bin_dir / "python").symlink_to(sys.executable)
    return env(PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")


def _done_lengths(run: Path) -> list[str]:
    try:
        state = json.loads((run / "sweep-state.json").read_text())
    except (OSError, ValueError):
        return []
    return [k for k, v in state.get("lengths", {}).items() if v.get("status") == "done"]


def _starts(folder: Path) -> int:
    return (folder / "logs" / "prefill.log").read_text().count(START_MARKER)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=lambda s: s.name)
def test_an_ab_stopped_just_after_an_arm_measured_every_length_resumes(site, sig):
    run = site["run"]
    proc = subprocess.Popen(_argv(site), env=_env(site), cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        deadline = time.monotonic() + 300
        while sorted(_done_lengths(run / "nixl"), key=int) != LENGTHS and proc.poll() is None \
                and time.monotonic() < deadline:
            time.sleep(0.02)
        if proc.poll() is not None:
            pytest.fail(f"the A/B ended before the signal: {proc.communicate()}")
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == (-9 if sig == signal.SIGKILL else 143), out + err
    assert "Traceback" not in err
    state = armsstate.read(run)
    assert state is not None and state.arm("nixl").status in ("running", "stopped", "done"), state
    starts = _starts(run / "nixl")
    bench = {L: (run / "nixl" / "bench" / f"result-{L}.jsonl").read_bytes() for L in LENGTHS}

    again = subprocess.run(_argv(site), env=_env(site), cwd=REPO, capture_output=True, text=True, timeout=400)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "Traceback" not in again.stderr
    assert _starts(run / "nixl") == starts, "a stack was started again into the measured arm's logs/"
    assert {L: (run / "nixl" / "bench" / f"result-{L}.jsonl").read_bytes() for L in LENGTHS} == bench
    for arm in ("mooncake_tcp", "nixl"):
        rec = record.read(run / arm)
        assert ownership.marked(rec.stack_id) == [], f"arm {arm} left processes running"
    state = armsstate.read(run)
    assert state is not None and [a.status for a in state.arms] == ["done", "done"]
    summary = json.loads((run / "ab-summary.json").read_text())
    assert summary["passed"] is True, summary
    assert pdrepro("check", str(run / "nixl")).returncode == 0
