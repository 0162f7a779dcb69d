"""What the host launcher's tests share: the shipped one-box scenario on free ports, `pdrepro stack`
run as a user runs it (a subprocess, stand-in servers first on its children's PYTHONPATH), foreign
processes the tests start themselves, and records forged to point at them."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pdrepro.launch.stack import ownership, record
from pdrepro.rundir import tuneplan

REPO = Path(__file__).resolve().parents[2]
STANDIN = REPO / "tests" / "fixtures" / "standin"
SCENARIO = REPO / "src/pdrepro/scenarios/onebox-qwen25-0.5b.yaml"
STACK_ID = "0123456789abcdef0123456789abcdef"


def free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def make_site(tmp_path: Path) -> dict:
    """The shipped one-box scenario on free ports (tests run in parallel), a model folder, a run folder."""
    prefill, decode, bootstrap, router = free_ports(4)
    text = SCENARIO.read_text().replace(
        "ports: {prefill: 30000, decode: 30001, bootstrap: 8998, router: 8000}",
        f"ports: {{prefill: {prefill}, decode: {decode}, bootstrap: {bootstrap}, router: {router}}}")
    assert str(router) in text
    scenario = tmp_path / "onebox-test.yaml"
    scenario.write_text(text)
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    options = ["--scenario", str(scenario), "--model", str(model), "--gpus", "0", "--force-tcp",
               "--server-arg=--attention-backend triton"]
    return {"options": options, "run": tmp_path / "run", "router": router, "prefill": prefill, "decode": decode,
            "tmp": tmp_path, "model": model}


@pytest.fixture
def site(tmp_path):
    made = make_site(tmp_path)
    yield made
    if record.path(made["run"]).is_file():  # a test that failed half-way leaves nothing running
        stack("down", str(made["run"]), "--grace", "1")


def stop_left(folders) -> None:
    """Stop each member's stack a test left running (its record says not stopped): a test that failed half-way
    leaves nothing running for the next."""
    for folder in folders:
        if record.path(folder).is_file() and record.read(folder).stopped_at is None:
            stack("down", str(folder), "--grace", "1")


def env(pythonpath: Path = STANDIN, **extra) -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if not k.startswith("STANDIN_") and k != ownership.MARKER}
    out["PYTHONPATH"] = os.pathsep.join([str(pythonpath), str(REPO / "src")])
    out.update(extra)
    return out


def stack(*args, env_=None, timeout=60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pdrepro", "stack", *args], capture_output=True, text=True,
                          env=env_ or env(), timeout=timeout, cwd=REPO)


def up(site, *extra, env_=None, timeout=60) -> subprocess.CompletedProcess:
    return stack("up", "--target", "onebox", "--launcher", "host", *site["options"], "--out", str(site["run"]),
                 "--poll", "0.1", "--grace", "5", *extra, env_=env_, timeout=timeout)


def up_argv(site, *extra) -> list[str]:
    return [sys.executable, "-m", "pdrepro", "stack", "up", *site["options"], "--out", str(site["run"]),
            "--poll", "0.1", "--grace", "5", *extra]


def python_on_path(tmp: Path) -> str:
    """The bench argv starts with `python` (the image's): here, this interpreter."""
    bin_dir = tmp / "bin"
    bin_dir.mkdir(exist_ok=True)
    link = bin_dir / "python"
    if not link.exists():
        link.symlink_to(sys.executable)
    return f"{bin_dir}{os.pathsep}{os.environ['PATH']}"


def sweep_standin(site, *extra: str, env_: dict) -> subprocess.CompletedProcess:
    """The real `pdrepro sweep` against the stand-in stack `up` started in ``site`` (its URLs from stack.json)."""
    run = site["run"]
    rec = json.loads((run / "stack.json").read_text())
    urls = {p["role"]: p["health_url"].rsplit("/", 1)[0] for p in rec["processes"]}
    dataset = site["tmp"] / "sharegpt.json"
    dataset.write_text("[]")
    return subprocess.run(
        [sys.executable, "-m", "pdrepro", "sweep", "--scenario", site["options"][1], "--router", urls["router"],
         "--prefill", urls["prefill"], "--decode", urls["decode"], "--out", str(run), "--model-path", str(site["model"]),
         "--dataset-path", str(dataset), "--bench-in-place", "--logs-from", str(run / "logs"), "--length-timeout", "60",
         "--wait-timeout", "30", *extra],
        capture_output=True, text=True, env=env_, timeout=240, cwd=REPO)


def cmdline(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")[:-1]


def alive(pid: int, ticks: int | None) -> bool:
    st = ownership.stat(pid)
    return st is not None and st.alive and st.start_ticks == ticks


def wait_gone(pids: list[int], within_s: float = 10.0) -> list[int]:
    """Those of ``pids`` still running after ``within_s`` (zombies count as gone)."""
    deadline = time.monotonic() + within_s
    while True:
        left = [p for p in pids if (st := ownership.stat(p)) is not None and st.alive]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


def foreign(*argv: str, **extra_env: str) -> subprocess.Popen:
    """A process of the test's own, in a session of its own, not started by any stack (no marker, unless
    ``extra_env`` gives one)."""
    return subprocess.Popen(list(argv) or ["sleep", "300"], env=env(**extra_env), stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)


def decoy_server(port: int) -> subprocess.Popen:
    """An unrelated stand-in with the same kind of command line, started outside the stack."""
    return foreign(sys.executable, "-m", "sglang.launch_server", "--port", str(port), "--disaggregation-mode",
                   "decode", STANDIN_CHILD="none")


def kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def forged(run: Path, *entries: dict, stack_id: str = STACK_ID, boot_id: str | None = None) -> record.StackRecord:
    """A record written into ``run`` naming the processes ``entries`` describe (pid, start_ticks, argv, ...)."""
    started = []
    for i, e in enumerate(entries):
        fields = {"name": f"prefill-{i}", "role": "prefill", "argv": ("python",), "env": {}, "port": 1,
                  "log": "logs/prefill.log", "health_url": "http://127.0.0.1:1/health",
                  "started_at": "2026-12-01T00:00:00+00:00", **e}
        started.append(record.Started(**fields))
    rec = record.StackRecord(scenario="x", stack_id=stack_id, boot_id=boot_id or ownership.boot_id(),
                             python=sys.executable, python_version="3", packages={}, modules={},
                             processes=tuple(started))
    run.mkdir(parents=True, exist_ok=True)
    record.save(run, rec)
    return rec


def one_line_error(proc: subprocess.CompletedProcess) -> str:
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    return lines[0]


def pdrepro(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """A `pdrepro` command as a user runs it, with the stand-in packages on the path."""
    return subprocess.run([sys.executable, "-m", "pdrepro", *args], env=env(), cwd=REPO, capture_output=True,
                          text=True, timeout=timeout)


def one_line(proc: subprocess.CompletedProcess) -> str:
    """The one error line of a command refused for its input (exit 2, no traceback)."""
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    return lines[0]


def render_tune(tmp: Path, *grid: str, one_at_a_time: bool = True) -> tuple[dict, Path, tuneplan.TunePlan]:
    """A tune rendered for SLURM over a stand-in site's second scenario (nothing runs): the site, the tune's
    folder and its plan. ``grid``: the --grid values, e.g. ``POOL=4,16``."""
    site = make_site(tmp)
    run = tmp / "tune"
    argv = ["tune", "--render", "slurm", "--scenario", site["options"][1], "--out", str(run)]
    argv += ["--one-at-a-time"] if one_at_a_time else []
    for axis in grid:
        argv += ["--grid", axis]
    rendered = pdrepro(*argv)
    assert rendered.returncode == 0, rendered.stderr
    plan = tuneplan.read(run)
    assert plan is not None
    return site, run, plan
