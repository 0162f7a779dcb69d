"""Ctrl-C or SIGTERM at any stage of `pdrepro repro` stops the whole pipeline with 130 or 143 (issue 22, item 9).

The real `pdrepro repro` in a child process, with the stage under test standing in as a command that says it
started and then waits: the test sends the child a real signal there and expects the signal's status, one
line saying so, no traceback, and no stage after it started (the gates' own child process gone too).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from signalse2e import HEAVY

REPO = Path(__file__).resolve().parents[2]

# Each stage's command replaced by one that announces itself and waits; the stages before it succeed.
SCRIPT = r"""
import sys, time
from pdrepro.commands import analyze, doctor, run_command, sweep

stage = sys.argv[1]

def waits(name):
    def run(args):
        print(f"STAGE {name}", flush=True)
        time.sleep(60)
        return 0
    return run

def ok(args):
    return 0

doctor.run = waits("preflight") if stage == "preflight" else ok
sweep.run = waits("sweep") if stage == "sweep" else ok
analyze.run = waits("analyze") if stage == "analyze" else ok
sys.exit(run_command(sys.argv[2:]))
"""

GATES = "import os, time; print('STAGE gates', os.getpid(), flush=True); time.sleep(60)"


def _repro(tmp_path, stage):
    argv = [sys.executable, "-c", SCRIPT, stage, "repro", "--router", "http://127.0.0.1:9", "--out", str(tmp_path / "run"),
            "--model-path", str(tmp_path), "--dataset-path", str(tmp_path / "d.json"),
            "--preflight", "decode", "--pytest", f"{sys.executable} -c \"{GATES}\""]
    return subprocess.Popen(argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})


def _wait_for_stage(proc, stage: str) -> str:
    deadline = time.monotonic() + 60
    seen = []
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        seen.append(line)
        if line.startswith(f"STAGE {stage}"):
            return line
    proc.kill()
    raise AssertionError(f"stage {stage} never started: {''.join(seen)}{proc.stderr.read()}")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=lambda s: s.name)
@pytest.mark.parametrize("stage", ["preflight", "sweep", "analyze", "gates"])
def test_a_signal_at_any_stage_stops_repro_with_its_status(tmp_path, stage, sig):
    proc = _repro(tmp_path, stage)
    try:
        line = _wait_for_stage(proc, stage)
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + sig, (proc.returncode, out, err)
    assert "Traceback" not in out + err
    # One line naming the signal, from the stage it stopped (or the pipeline between stages).
    assert len([l for l in err.splitlines() if f": interrupted ({sig.name})" in l]) == 1, err
    later = {"preflight": "== 2/4", "sweep": "== 3/4", "analyze": "== 4/4", "gates": "report:"}[stage]
    assert later not in out, out
    if stage == "gates":
        child = int(line.split()[2])
        # The gates' child was stopped with the pipeline, not left running: gone within a few seconds (a loaded
        # 2-core machine can take longer than a blink to reap it), never still there.
        deadline = time.monotonic() + 5
        with pytest.raises(ProcessLookupError):
            while True:
                os.kill(child, 0)
                if time.monotonic() > deadline:
                    break
                time.sleep(0.05)


# A gate suite that says it started and then waits: the real pytest runs it, as `pdrepro repro` runs repro/.
# It notes each terminal signal it is sent in heard.txt (then acts as pytest does: an interrupt), so the test
# sees whether the gates' process was reached at all, not only whether its traceback won a race to the screen.
SLOW_GATES = '''
import os, signal, time
def _heard(signum, frame):
    with open(os.path.join(os.path.dirname(__file__), "heard.txt"), "a") as fh:
        fh.write(signal.Signals(signum).name + chr(10))
    raise KeyboardInterrupt
def test_waits():
    for s in (signal.SIGINT, signal.SIGHUP):
        signal.signal(s, _heard)
    print("STAGE gates", os.getpid(), flush=True)
    time.sleep(60)
'''


@pytest.mark.parametrize("sig", [signal.SIGINT, pytest.param(signal.SIGHUP, marks=HEAVY)], ids=lambda s: s.name)
def test_a_terminals_signal_during_the_gates_shows_only_the_bundles_line(tmp_path, sig):
    # A terminal sends Ctrl-C (and its hang-up) to the whole foreground process group: the gates' pytest used
    # to take it too and print its own KeyboardInterrupt traceback above the bundle's one line.
    gates = tmp_path / "gates"
    gates.mkdir()
    (gates / "test_slow.py").write_text(SLOW_GATES)
    (gates / "conftest.py").write_text("def pytest_addoption(parser):\n    parser.addoption('--run-dir')\n")
    argv = [sys.executable, "-c", SCRIPT, "gates", "repro", "--router", "http://127.0.0.1:9", "--out",
            str(tmp_path / "run"), "--model-path", str(tmp_path), "--dataset-path", str(tmp_path / "d.json"),
            "--gates", str(gates), "--pytest", f"{sys.executable} -m pytest -s"]
    proc = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"}, start_new_session=True)
    try:
        line = _wait_for_stage(proc, "gates")
        sent = time.monotonic()
        os.killpg(proc.pid, sig)  # to the group, as a terminal does
        out, err = proc.communicate(timeout=30)
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 128 + sig, (proc.returncode, out, err)
    assert took < 2, f"{took:.1f} s to stop"
    assert "KeyboardInterrupt" not in out + err and "Traceback" not in out + err, out + err
    assert [l for l in err.splitlines() if l.strip()] == [f"pdrepro repro: interrupted ({sig.name}); results "
                                                          "written so far are kept."], err
    time.sleep(0.2)
    with pytest.raises(ProcessLookupError):
        os.kill(int(line.split()[2]), 0)  # the gates' pytest was stopped with the pipeline
    assert not (gates / "heard.txt").exists(), "the terminal's signal reached the gates' pytest itself"
