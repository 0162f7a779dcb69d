"""The sweep's wait for its stack answers a signal within a second, wherever it is (inside a request to a
server that never answers, not only between rounds), and ends as the signal (130, 143), not as a timeout;
``--wait-timeout`` bounds the whole wait, every request in it included, not each URL or round. Real processes:
the sweep through the CLI (tests/sweepsignal_script.py, ``silent``) against a real socket on 127.0.0.1 that
takes connections and never answers."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from signalse2e import HEAVY

TESTS = Path(__file__).resolve().parents[1]


def _start(tmp_path: Path, wait_timeout: float) -> subprocess.Popen:
    """The sweep, once it says it waits for the stack (its wait begins with that line)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])}
    argv = [sys.executable, str(TESTS / "sweepsignal_script.py"), str(tmp_path), "silent", str(wait_timeout)]
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    assert proc.stdout is not None
    seen = []
    while not seen or "waiting for the stack" not in seen[-1]:
        seen.append(proc.stdout.readline())
        if not seen[-1]:
            pytest.fail(f"the sweep never waited for its stack: {''.join(seen)} {proc.communicate()}")
    return proc


def _ended(proc: subprocess.Popen, within: float) -> tuple[int, str]:
    try:
        _, err = proc.communicate(timeout=within)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"the sweep was still running {within} s later: {err[-2000:]}")
    return proc.returncode, err


@pytest.mark.parametrize("signum, status", [(signal.SIGINT, 130), pytest.param(signal.SIGTERM, 143, marks=HEAVY)])
def test_a_signal_during_the_wait_for_the_stack_ends_the_sweep_within_a_second(tmp_path, signum, status):
    proc = _start(tmp_path, wait_timeout=120)
    time.sleep(1.5)  # well inside the first request: each is given up to 10 s
    assert proc.poll() is None, proc.communicate()
    sent = time.monotonic()
    proc.send_signal(signum)
    rc, err = _ended(proc, within=30)
    took = time.monotonic() - sent
    assert rc == status, err
    # Heard within a second; the rest is the process ending (its clean-up, the interpreter's exit) on a
    # machine the parallel suite loads. Before, the signal waited for the request's 10 s.
    assert took < 3, f"the sweep took {took:.1f} s to answer {signum.name}"
    assert "Traceback" not in err
    assert f"interrupted ({signum.name})" in err


def test_the_wait_timeout_bounds_the_whole_wait(tmp_path):
    # Three URLs of two paths each, and a server that never answers: each request used to be given up to
    # 10 s on its own, so a 3 s wait lasted a minute.
    proc = _start(tmp_path, wait_timeout=3)
    started = time.monotonic()
    rc, err = _ended(proc, within=60)
    took = time.monotonic() - started
    assert rc == 2, err
    assert "not healthy after 3 s" in err and "Traceback" not in err
    assert took < 3 + 3, f"a 3 s wait took {took:.1f} s"
