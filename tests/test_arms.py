"""The arms runner (pdrepro.arms) as a user runs it: a child process, real `pdrepro stack up` and `stack down` of
the stand-in servers on 127.0.0.1, each arm in its own folder, the sweep stage standing in (tests/armsscript.py).
Each arm's stack is down when the runner ends, whether the arm passed, failed or was stopped by a real signal;
a rerun resumes at the arm it reached; a state of another AB, or a tampered one, is refused on one line."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from memberhelp import member, plain, recording
from signalse2e import HEAVY
from stackhelp import env, make_site, stop_left

from pdrepro import arms
from pdrepro.launch.stack import ownership, record
from pdrepro.rundir import armsstate, memberrecord

TESTS = Path(__file__).resolve().parent
SCRIPT = TESTS / "armsscript.py"


def _arms(site: dict, plain_second: bool = True) -> list[dict]:
    """Two arms of the one stand-in scenario: one with --force-tcp, one without (the site options' own)."""
    options = [o for o in site["options"] if o != "--force-tcp"]
    stack = ["--target", "onebox", "--launcher", "host", *options, "--poll", "0.1", "--grace", "5"]
    sweep = ["--scenario", options[1], "--model-path", str(site["model"]), "--dataset-path", "/nonexistent.json"]
    return [{"name": "tcp", "stack": [*stack, "--force-tcp"], "sweep": sweep},
            {"name": "plain", "stack": stack if plain_second else [*stack, "--force-tcp"], "sweep": sweep}]


def _spec(site: dict, label: str = "test AB", **kw) -> Path:
    specs = sorted(site["tmp"].glob("spec-*.json"))
    path = site["tmp"] / f"spec-{len(specs)}.json"
    path.write_text(json.dumps({"label": label, "arms": _arms(site, **kw)}))
    return path


def _start(site: dict, spec: Path, **fake: str) -> subprocess.Popen:
    extra = {"ARMS_FAKE_LOG": str(site["tmp"] / "sweeps.txt"), **fake}
    return subprocess.Popen([sys.executable, str(SCRIPT), "arms", str(site["run"]), str(spec)], env=env(**extra),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=TESTS.parent)


def _run(site: dict, spec: Path, **fake: str) -> subprocess.CompletedProcess:
    proc = _start(site, spec, **fake)
    out, err = proc.communicate(timeout=180)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def _nothing_runs(run: Path) -> None:
    for arm in ("tcp", "plain"):
        if record.path(run / arm).is_file():
            rec = record.read(run / arm)
            assert rec.stopped_at is not None, f"arm {arm}'s stack was not taken down"
            assert ownership.marked(rec.stack_id) == [], f"arm {arm} left processes running"


def _sweeps(site: dict) -> list[list[str]]:
    path = site["tmp"] / "sweeps.txt"
    return [line.split() for line in path.read_text().splitlines()] if path.exists() else []


@pytest.fixture
def site(tmp_path):
    made = make_site(tmp_path)
    yield made
    stop_left(made["run"] / arm for arm in ("tcp", "plain"))


def test_each_arm_is_up_swept_and_down_in_its_own_folder(site):
    done = _run(site, _spec(site))
    assert done.returncode == 0, done.stdout + done.stderr
    _nothing_runs(site["run"])
    state = armsstate.read(site["run"])
    assert state is not None and [(a.name, a.status, a.exit) for a in state.arms] == [("tcp", "done", 0),
                                                                                     ("plain", "done", 0)]
    swept = _sweeps(site)
    assert [s[0] for s in swept] == ["tcp", "plain"]
    # The whole-job line before each arm: its place, and an ETA only once an arm has run to its end.
    jobs = [line for line in done.stdout.splitlines() if line.startswith("== member ")]
    assert [line.split(", elapsed")[0] for line in jobs] == ["== member 1 of 2 (tcp)", "== member 2 of 2 (plain)"]
    assert jobs[0].endswith("ETA unknown until the first ends")
    assert jobs[1].endswith("(from the 1 member done)") and " ETA " in jobs[1]
    for arm, router, prefill, decode in swept:
        # The sweep was pointed at the URLs its own stack recorded.
        urls = {p.role: p.health_url.rsplit("/", 1)[0] for p in record.read(site["run"] / arm).processes}
        assert (router, prefill, decode) == (urls["router"], urls["prefill"], urls["decode"])
    # The arm's stack ran as asked: --force-tcp in one arm's servers' environment only.
    envs = {arm: record.read(site["run"] / arm).processes[0].env for arm in ("tcp", "plain")}
    assert envs["tcp"].get("MC_FORCE_TCP") == "1" and "MC_FORCE_TCP" not in envs["plain"]
    assert (site["run"] / "tcp" / "bench").is_dir() and (site["run"] / "plain" / "bench").is_dir()
    # Each arm records whose member it is: the run's own id (in its state) and the arm's name.
    assert state.run_id is not None
    for arm in ("tcp", "plain"):
        rec = memberrecord.read(site["run"] / arm)
        assert rec is not None and (rec.kind, rec.composite, rec.member) == ("ab", state.run_id, arm)


def test_a_failed_sweep_still_takes_its_stack_down_and_the_next_arm_runs(site):
    done = _run(site, _spec(site), ARMS_FAKE_STATUS="tcp:1")
    assert done.returncode == 1, done.stdout + done.stderr
    _nothing_runs(site["run"])
    state = armsstate.read(site["run"])
    assert state is not None
    assert [(a.name, a.status, a.exit) for a in state.arms] == [("tcp", "failed", 1), ("plain", "done", 0)]
    assert "`pdrepro sweep` ended with status 1" in (state.arm("tcp").reason or "")


def test_a_refused_sweep_is_the_arms_finding_and_the_next_arm_runs(site):
    done = _run(site, _spec(site), ARMS_FAKE_STATUS="tcp:2")
    assert done.returncode == 2
    _nothing_runs(site["run"])
    assert [s[0] for s in _sweeps(site)] == ["tcp", "plain"]
    state = armsstate.read(site["run"])
    assert state is not None and [(a.status, a.exit) for a in state.arms] == [("failed", 2), ("done", 0)]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=lambda s: s.name)
def test_a_signal_during_a_sweep_takes_the_stack_down_and_a_rerun_resumes_there(site, sig):
    spec = _spec(site)
    proc = _start(site, spec, ARMS_FAKE_WAIT="plain")
    try:
        deadline = time.monotonic() + 120
        seen = []
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            seen.append(line)
            if line.startswith("SWEEP plain waiting") or not line:
                break
        assert seen[-1].startswith("SWEEP plain waiting"), "".join(seen) + proc.stderr.read()
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 128 + sig, out + err
    assert "Traceback" not in err
    _nothing_runs(site["run"])
    state = armsstate.read(site["run"])
    assert state is not None and [(a.name, a.status, a.exit) for a in state.arms] == [("tcp", "done", 0),
                                                                                     ("plain", "stopped", 128 + sig)]
    # Stopped, not failed: the state names the signal and how to go on, so no judge reads it as a finding.
    assert state.arm("plain").reason == (f"stopped by {signal.Signals(sig).name}: `pdrepro sweep` ended with status "
                                         f"{128 + sig}; rerun the same command to resume")
    again = _run(site, spec)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "== arm tcp: done already, skipped" in again.stdout
    assert [s[0] for s in _sweeps(site)] == ["tcp", "plain", "plain"]
    _nothing_runs(site["run"])


def test_a_signal_between_arms_ends_after_the_arm_and_the_rerun_starts_the_next(site):
    spec = _spec(site)
    done = _run(site, spec, ARMS_FAKE_SIGNAL_AFTER="tcp")
    assert done.returncode == 143, done.stdout + done.stderr
    _nothing_runs(site["run"])
    assert not record.path(site["run"] / "plain").exists(), "the next arm started after the signal"
    state = armsstate.read(site["run"])
    assert state is not None and [a.status for a in state.arms] == ["done", "pending"]
    again = _run(site, spec)
    assert again.returncode == 0, again.stdout + again.stderr
    assert [s[0] for s in _sweeps(site)] == ["tcp", "plain"]
    # The arm done before counts in the position, not in the ETA's mean (it took no time in this run).
    assert "== member 2 of 2 (plain), elapsed " in again.stdout and "ETA unknown until the first ends" in again.stdout


def test_a_state_of_another_ab_is_refused_by_name(site):
    assert _run(site, _spec(site)).returncode == 0
    before = armsstate.path(site["run"]).read_bytes()
    other = _run(site, _spec(site, label="another AB"))
    assert other.returncode == 2
    lines = other.stderr.strip().splitlines()
    assert len(lines) == 1 and "holds 'test AB', not 'another AB'" in lines[0], other.stderr
    changed = _run(site, _spec(site, plain_second=False))
    # A real change is named: the arm, the field, both values, on one line.
    assert changed.returncode == 2 and changed.stderr.count("\n") == 1, changed.stderr
    assert "arm plain: its stack's --force-tcp was off and is now on; give another --out" in changed.stderr
    assert armsstate.path(site["run"]).read_bytes() == before
    assert len(_sweeps(site)) == 2, "a refused state started an arm"


@pytest.mark.parametrize("tamper", [
    lambda d: d["arms"][0].update(status="finished"),
    lambda d: d["arms"][0].update(exit=999),
    lambda d: d["arms"][1].update(name="tcp"),
    lambda d: d["arms"][1].update(name="../elsewhere"),
    lambda d: d.update(surprise=1),
], ids=["status", "exit", "twice", "path", "unknown-key"])
def test_a_tampered_state_is_refused_on_one_line(site, tamper):
    spec = _spec(site)
    path = armsstate.path(site["run"])
    site["run"].mkdir()
    data = {"schema_version": 1, "label": "test AB",
            "arms": [{"name": a["name"], "stack": a["stack"], "sweep": a["sweep"]} for a in _arms(site)]}
    tamper(data)
    path.write_text(json.dumps(data))
    done = _run(site, spec)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and str(path) in lines[0] and "Traceback" not in done.stderr, done.stderr
    assert _sweeps(site) == [] and not record.path(site["run"] / "tcp").exists()


@pytest.mark.parametrize("command", ["ab", "tune", "compare"])
def test_an_arms_error_line_names_the_command_that_runs_it(tmp_path, command):
    # A stack that says it came up but left no stack.json: the runner cannot read where to sweep, and says so
    # as the command the user ran, not as another command that shares the runner.
    said: list[str] = []
    calls: list[tuple[str, Path]] = []
    arm = plain(tmp_path / "run", "x")
    status = arms.run_arms(tmp_path / "run", f"{command} s", [arm], command=command, stages=recording(calls),
                           say=said.append)
    assert status == 2 and calls == [("stack up", tmp_path / "run" / "x")]
    errors = [line for line in said if ": error: " in line]
    assert len(errors) == 1 and errors[0].startswith(f"pdrepro {command}: error: arm x: "), said
    assert f"{tmp_path / 'run' / 'x'}: no stack.json there" in errors[0]
    state = armsstate.read(tmp_path / "run")
    assert state is not None and state.arm("x").status == "failed" and state.arm("x").exit == 2


def test_a_reason_is_kept_as_one_bounded_line_that_the_state_reads_back(tmp_path):
    """A stage's message with a line break or of any length is written as a reason the state accepts: the
    runner never leaves a state its own resume would refuse."""
    flat = armsstate.one_line("first\nsecond\x7f" + "x" * 5000)
    assert "\n" not in flat and "\x7f" not in flat and len(flat) == armsstate.REASON_MAX
    state = armsstate.ArmsState(label="test", arms=(armsstate.ArmRecord(name="a", status="failed", exit=2,
                                                                       reason=flat),))
    armsstate.write(tmp_path, state)
    assert armsstate.read(tmp_path) == state


def _counted_starts(folder: Path) -> int:
    """How many stacks were started into the arm's folder: each `stack up` writes its servers' logs there."""
    from pdrepro.parsers.serverstart import START_MARKER

    log = folder / "logs" / "prefill.log"
    return log.read_text().count(START_MARKER) if log.is_file() else 0


def test_an_arm_stopped_after_measuring_every_length_is_judged_not_run_again(site):
    # A SIGTERM while the arm's sweep copied its logs or analysed: every length is measured, the arm is
    # "stopped". The rerun used to start its stack again into the same logs/, whose new start served nothing,
    # and the analysis refused the log on every rerun after ("the server started again at line N").
    spec = _spec(site)
    first = _run(site, spec, ARMS_FAKE_SIGNAL_IN_TAIL="plain")
    assert first.returncode == 143, first.stdout + first.stderr
    state = armsstate.read(site["run"])
    assert state is not None and [(a.status, a.exit) for a in state.arms] == [("done", 0), ("stopped", 143)]
    _nothing_runs(site["run"])
    started = record.read(site["run"] / "plain").stack_id
    bench = {p.name: p.read_bytes() for p in (site["run"] / "plain" / "bench").iterdir()}
    assert bench and arms.measured(site["run"], member(site["run"], "plain", [], _arms(site)[1]["sweep"])) is None

    again = _run(site, spec)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "== arm plain: every length is measured already; judged, not run again" in again.stdout
    assert [s[0] for s in _sweeps(site)] == ["tcp", "plain"], "the measured arm was swept again"
    assert record.read(site["run"] / "plain").stack_id == started, "a stack was started into the measured arm"
    assert {p.name: p.read_bytes() for p in (site["run"] / "plain" / "bench").iterdir()} == bench
    assert (site["run"] / "plain" / "summary.json").is_file()  # analysed, as its sweep would have at its end
    state = armsstate.read(site["run"])
    assert state is not None and [(a.status, a.exit) for a in state.arms] == [("done", 0), ("done", 0)]


@HEAVY  # its fast representative: the judged-not-run test above; and compare's own leftover test
def test_a_runner_killed_outright_takes_its_leftover_stack_down_before_it_resumes(site):
    spec = _spec(site)
    proc = _start(site, spec, ARMS_FAKE_WAIT="plain")
    try:
        deadline = time.monotonic() + 120
        line = ""
        while time.monotonic() < deadline and not line.startswith("SWEEP plain waiting"):
            line = proc.stdout.readline() or "EOF"
            assert line != "EOF", proc.stderr.read()
    finally:
        proc.kill()  # SIGKILL: no clean-up at all, as a machine that went away or the OOM killer
        proc.wait()
    left = record.read(site["run"] / "plain")
    assert left.stopped_at is None and ownership.marked(left.stack_id), "the killed runner's stack should still run"

    again = _run(site, spec)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "== arm plain: an earlier run left its stack record unstopped" in again.stdout
    assert ownership.marked(left.stack_id) == []
    state = armsstate.read(site["run"])
    assert state is not None and [a.status for a in state.arms] == ["done", "done"]
    _nothing_runs(site["run"])


@HEAVY
def test_a_leftover_stack_it_cannot_prove_its_own_is_named_and_left_alone(site):
    import os

    from stackhelp import foreign, kill

    spec = _spec(site)
    assert _run(site, spec).returncode == 0
    sleeper = foreign("sleep", "300")  # no stack's marker: not the arm's, whatever its record says
    try:
        folder = site["run"] / "plain"
        rec = record.read(folder)
        entry = rec.processes[0].model_copy(update={"pid": sleeper.pid,
                                                    "start_ticks": ownership.start_ticks(sleeper.pid)})
        record.save(folder, rec.model_copy(update={"stopped_at": None, "processes": (entry,)}))
        again = _run(site, spec)
        assert again.returncode == 2, again.stdout + again.stderr
        assert f"pid {sleeper.pid}" in again.stderr and "left alone" in again.stderr, again.stderr
        assert "not all provably its own" in again.stdout
        assert sleeper.poll() is None, "a process the arm's stack did not start was signalled"
        assert os.path.exists(f"/proc/{sleeper.pid}")
    finally:
        kill(sleeper)
