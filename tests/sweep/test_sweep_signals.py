"""A sweep ends cleanly on SIGTERM (scancel, docker stop), SIGINT and SIGHUP: the bench client is stopped
whether it is a child process or a container, nothing writes into the run afterwards, the length is marked
unfinished in the sweep state, and the exit status is 128 + the signal (143 / 130 / 129). A second sweep on
the same run directory while one runs is refused, naming the first; a lock of a sweep that died is no lock."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from smokeimage import SMOKE_IMAGE, require_docker

from pdrepro.core.errors import UserError

TESTS = Path(__file__).resolve().parents[1]


def _start(tmp_path: Path, launcher: str, image: str | None = None) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])}
    argv = [sys.executable, str(TESTS / "sweepsignal_script.py"), str(tmp_path), launcher] + ([image] if image else [])
    return subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def _partial(tmp_path: Path) -> Path:
    return tmp_path / "run" / "bench" / ".result-128.jsonl.partial"


def _wait_for_client(proc: subprocess.Popen, tmp_path: Path, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _partial(tmp_path).exists() and _partial(tmp_path).stat().st_size > 0:
            return
        if proc.poll() is not None:
            pytest.fail(f"sweep ended before its client wrote: {proc.communicate()}")
        time.sleep(0.1)
    proc.kill()
    pytest.fail(f"the fake client never wrote: {proc.communicate()}")


def _nothing_writes(tmp_path: Path) -> None:
    bench = tmp_path / "run" / "bench"
    sizes = {p: p.stat().st_size for p in bench.iterdir()}
    time.sleep(1.0)
    assert {p: p.stat().st_size for p in bench.iterdir()} == sizes, "something still writes into the run"


def _stop(proc, tmp_path, signum) -> tuple[int, str]:
    proc.send_signal(signum)
    try:
        out, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        pytest.fail("the sweep did not end after the signal")
    return proc.returncode, err


@pytest.mark.parametrize("signum, status", [(signal.SIGTERM, 143), (signal.SIGINT, 130), (signal.SIGHUP, 129)])
def test_a_signal_stops_the_child_client_and_marks_the_length_unfinished(tmp_path, signum, status):
    proc = _start(tmp_path, "child")
    _wait_for_client(proc, tmp_path)
    rc, err = _stop(proc, tmp_path, signum)
    assert rc == status, err
    assert "Traceback" not in err
    _nothing_writes(tmp_path)
    state = json.loads((tmp_path / "run" / "sweep-state.json").read_text())
    assert state["lengths"]["128"]["status"] == "unfinished", state
    assert signal.Signals(signum).name in state["lengths"]["128"]["reason"]
    assert not (tmp_path / "run" / "bench" / "result-128.jsonl").exists()


def test_a_signal_the_kernel_gives_another_thread_still_stops_the_sweep(tmp_path):
    # The root of the SIGTERM flake: the sweep's main thread sat in waitpid() with no timeout, and a signal
    # taken by another thread (or just before that call) never ran its handler; the client never ends, so
    # neither did the sweep. Here only a side thread can take the signal, every time.
    proc = _start(tmp_path, "child-masked")
    _wait_for_client(proc, tmp_path)
    rc, err = _stop(proc, tmp_path, signal.SIGTERM)
    assert rc == 143, err
    assert "Traceback" not in err
    _nothing_writes(tmp_path)
    state = json.loads((tmp_path / "run" / "sweep-state.json").read_text())
    assert state["lengths"]["128"]["status"] == "unfinished", state


@pytest.mark.parametrize("first, repeats, status", [
    (signal.SIGTERM, (signal.SIGTERM, signal.SIGINT, signal.SIGHUP), 143),
    (signal.SIGINT, (signal.SIGINT, signal.SIGTERM), 130),
])
def test_repeated_signals_while_the_sweep_stops_end_it_with_the_first_signals_status(tmp_path, first, repeats, status):
    # docker stop's grace, a second Ctrl-C: neither cuts the clean-up short nor ends the process by the signal.
    proc = _start(tmp_path, "child")
    _wait_for_client(proc, tmp_path)
    proc.send_signal(first)
    # The same signal again at once; other signals only once the sweep has acted on the first (the client's
    # partial result is gone): pending together, signals are taken lowest number first, so "first" would
    # not be defined.
    for delay in (0.0, 0.01, 0.05):
        time.sleep(delay)
        if proc.poll() is None:
            proc.send_signal(first)
    deadline = time.monotonic() + 30
    while _partial(tmp_path).exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    for delay in (0.0, 0.02, 0.1, 0.3):
        time.sleep(delay)
        for signum in repeats:
            if proc.poll() is None:
                proc.send_signal(signum)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == status, err
    assert "Traceback" not in err
    _nothing_writes(tmp_path)
    state = json.loads((tmp_path / "run" / "sweep-state.json").read_text())
    assert state["lengths"]["128"]["status"] == "unfinished"
    assert signal.Signals(first).name in state["lengths"]["128"]["reason"]


def _containers(label: str) -> list[str]:
    out = subprocess.run(["docker", "ps", "-aq", "--filter", f"label={label}"], capture_output=True, text=True,
                         timeout=60).stdout
    return out.split()


def test_sigterm_stops_the_bench_container_itself(tmp_path):
    # A real container of the smoke image (python3 in it), not a fake engine: stopping only the docker
    # CLI or SDK call would leave it writing into the run.
    require_docker()
    if subprocess.run(["docker", "image", "inspect", SMOKE_IMAGE], capture_output=True, timeout=60).returncode:
        pytest.skip(f"{SMOKE_IMAGE} is not built here (make smoke-image)")
    proc = _start(tmp_path, "docker", SMOKE_IMAGE)
    _wait_for_client(proc, tmp_path)
    label = f"pdrepro.writes={(tmp_path / 'run').resolve()}"
    assert _containers(label), "the client is not a labelled container"
    rc, err = _stop(proc, tmp_path, signal.SIGTERM)
    assert rc == 143, err
    assert _containers(label) == []
    _nothing_writes(tmp_path)
    state = json.loads((tmp_path / "run" / "sweep-state.json").read_text())
    assert state["lengths"]["128"]["status"] == "unfinished"


def test_a_second_sweep_on_the_same_run_is_refused_naming_the_first(tmp_path):
    from pdrepro.sweep.runlock import RunLock

    proc = _start(tmp_path, "child")
    try:
        _wait_for_client(proc, tmp_path)
        with pytest.raises(UserError) as info:
            with RunLock(tmp_path / "run"):
                pass
        message = str(info.value)
        assert f"pid {proc.pid}" in message and os.uname().nodename in message and "\n" not in message
    finally:
        _stop(proc, tmp_path, signal.SIGTERM)


def test_the_lock_of_a_sweep_that_died_does_not_stay(tmp_path):
    from pdrepro.sweep.runlock import RunLock

    run = tmp_path / "run"
    run.mkdir()
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; sys.path[:0] = sys.argv[2:3]\n"
                               "from pdrepro.sweep.runlock import RunLock\n"
                               "lock = RunLock(sys.argv[1]); lock.__enter__(); print('held', flush=True); time.sleep(60)",
                               str(run), os.environ.get("PYTHONPATH", "")], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    with pytest.raises(UserError, match=f"pid {holder.pid}"):
        RunLock(run).__enter__()
    holder.kill()
    holder.wait()
    with RunLock(run):  # the kernel released it with the process
        pass


def test_a_killed_sweep_leaves_no_child_client_writing(tmp_path):
    # SIGKILL runs no clean-up: the child client must die with the sweep (PR_SET_PDEATHSIG), or a resume
    # would run a second client next to it.
    proc = _start(tmp_path, "child")
    _wait_for_client(proc, tmp_path)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    time.sleep(0.5)
    _nothing_writes(tmp_path)


def test_a_resume_stops_the_container_a_killed_sweep_left(tmp_path, caplog):
    from pdrepro.sweep.benchclient import WRITES_LABEL, DockerLauncher

    require_docker()
    if subprocess.run(["docker", "image", "inspect", SMOKE_IMAGE], capture_output=True, timeout=60).returncode:
        pytest.skip(f"{SMOKE_IMAGE} is not built here (make smoke-image)")
    run = (tmp_path / "run").resolve()
    run.mkdir()
    label = f"{WRITES_LABEL}={run}"
    left = subprocess.run(["docker", "run", "-d", "--label", label, "-v", f"{run}:{run}", SMOKE_IMAGE, "python3",
                           "-c", f"import time\nwhile True:\n    open('{run}/left', 'a').write('x')\n    time.sleep(0.05)"],
                          capture_output=True, text=True, timeout=120)
    assert left.returncode == 0, left.stderr
    try:
        caplog.set_level(logging.INFO, logger="pdrepro")
        rc = DockerLauncher(SMOKE_IMAGE).run(["python3", "-c", "print('mine')"], mounts={run: True}, timeout_s=60)
        assert rc == 0
        lines = caplog.messages
        assert any("left running by an earlier sweep" in line for line in lines), lines
        assert _containers(label) == []
    finally:
        subprocess.run(["docker", "rm", "-f", left.stdout.strip()], capture_output=True, timeout=60)


def test_a_second_pdrepro_sweep_on_the_same_out_exits_2_naming_the_first(tmp_path):
    first = _start(tmp_path, "child")
    try:
        _wait_for_client(first, tmp_path)
        second = _start(tmp_path, "child")
        out, err = second.communicate(timeout=120)
        assert second.returncode == 2, err
        errors = [line for line in err.splitlines() if line.startswith("pdrepro sweep: error:")]
        assert len(errors) == 1 and f"pid {first.pid}" in errors[0] and "already runs" in errors[0], err
        assert "Traceback" not in err
        assert first.poll() is None, "the first sweep must go on"
    finally:
        _stop(first, tmp_path, signal.SIGTERM)


def test_the_wait_on_a_bench_container_leaves_at_a_safe_point_on_a_signal():
    # The Docker launcher's wait runs on a thread; the sweep's thread polls and raises at a safe point, so a
    # signal never lands inside the engine call (its caller's finally then removes the container).
    import threading

    from pdrepro.core import signals
    from pdrepro.sweep.benchclient import LengthTimeout, _wait_container

    release = threading.Event()

    class Container:
        def __init__(self, answer):
            self.answer = answer

        def wait(self, timeout=None):
            release.wait(30)
            if isinstance(self.answer, Exception):
                raise self.answer
            return self.answer

    saved = {s: signal.getsignal(s) for s in signals.HANDLED}
    try:
        threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGTERM)).start()
        t0 = time.monotonic()
        with pytest.raises(signals.Stopped) as info:
            with signals.stop_on_signals():
                _wait_container(Container({"StatusCode": 0}), None)
        assert info.value.signum == signal.SIGTERM and time.monotonic() - t0 < 5
    finally:
        release.set()
        for s, handler in saved.items():
            signal.signal(s, handler)
    assert _wait_container(Container({"StatusCode": 3}), 10) == {"StatusCode": 3}
    with pytest.raises(LengthTimeout):
        _wait_container(Container(RuntimeError("Read timed out.")), 10)
