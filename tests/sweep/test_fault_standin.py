"""`pdrepro fault` against the stand-in stack `pdrepro stack up` starts on 127.0.0.1 (tests/fixtures/standin): each
fault really run, with real signals on the stack's real processes, under a real load through the router; every
request accounted for; a request the decode server holds without an error fails as lost; a stopped server is
resumed when the command is interrupted; a process the record does not prove ours is never touched."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from stackhelp import REPO, alive, env, foreign, forged, kill, site, stack, up

from pdrepro.cli import main
from pdrepro.core.errors import UserError
from pdrepro.launch.stack import ownership, record, restart
from pdrepro.rundir import faultsummary

__all__ = ["site"]  # the fixture, used by name

# Small loads: each fault is a few seconds of the suite.
LOAD = ["--requests", "12", "--concurrency", "4", "--client-timeout", "3", "--prompt-tokens", "16",
        "--new-tokens", "4"]


def fault_argv(site, *extra: str) -> list[str]:
    return [sys.executable, "-m", "pdrepro", "fault", str(site["run"]), *LOAD, "--out", str(site["tmp"] / "fault"),
            *extra]


def fault(site, *extra: str, env_=None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(fault_argv(site, *extra), capture_output=True, text=True, env=env_ or env(), cwd=REPO,
                          timeout=timeout)


def summary(site) -> faultsummary.FaultSummary:
    return faultsummary.read(site["tmp"] / "fault")


def pids(run: Path) -> dict[str, tuple[int | None, int | None]]:
    return {p.name: (p.pid, p.start_ticks) for p in record.read(run).processes}


def check(site) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pdrepro", "check", str(site["tmp"] / "fault")], capture_output=True,
                          text=True, env=env(), cwd=REPO, timeout=60)


def test_every_fault_is_run_and_every_request_accounted_for(site):
    # The decode server holds each request half a second: the faults hit requests in flight there.
    hold = env(STANDIN_HOLD_S="decode:0.5")
    started = up(site, env_=hold)
    assert started.returncode == 0, started.stdout + started.stderr
    before = pids(site["run"])
    done = fault(site, "--fault", "all", "--stop-seconds", "1", "--recovery-bound", "20", env_=hold)
    assert done.returncode == 0, done.stdout + done.stderr
    got = summary(site)
    assert [f.fault for f in got.faults] == ["kill-decode", "kill-prefill", "stop-decode", "kill-router"]
    for f in got.faults:
        c = faultsummary.account(f.requests)
        assert f.error is None and f.in_flight_at_fault >= 1, f
        assert len(f.requests) == 12 and c.answered + c.errored + c.lost == 12 and c.lost == 0
        assert c.answered >= 3  # a quarter of the load was answered before the fault
        assert f.recovery_s is not None and 0 < f.recovery_s <= 20
        assert f.signalled and f.signalled[0].startswith(f.target)
    by = {f.fault: f for f in got.faults}
    assert by["stop-decode"].resumed is True and by["stop-decode"].stopped_for_s >= 1
    for k in ("kill-decode", "kill-prefill", "kill-router"):
        assert by[k].restarted and 0 < by[k].restart_up_s <= by[k].recovery_s, by[k]  # type: ignore[operator]
    # The requests in flight at a killed decode server or router saw an error (the router's 502, a reset
    # connection); none was lost. The router logged the 502s; the decode's counters began again.
    for name in ("kill-decode", "kill-router"):
        assert faultsummary.account(by[name].requests).errored >= 1, by[name]
    assert [r for r in by["kill-decode"].requests if r.outcome == "http_error" and r.status == 502]
    assert any(line.server == "router" and " 502 " in line.line for line in by["kill-decode"].log_lines)
    assert {m.server: m.note for m in by["kill-decode"].metrics}["decode-0"].startswith("started again")
    stopped = {m.server: m for m in by["stop-decode"].metrics}["decode-0"]
    assert stopped.generate_responses is not None and stopped.generate_responses >= 12
    # Each killed role runs again as a new process, recorded in its own entry; the old one is gone.
    after = pids(site["run"])
    for name in ("prefill-0", "decode-0", "router"):
        assert after[name] != before[name] and not alive(*before[name]) and alive(*after[name])  # type: ignore[arg-type]
    assert [p.name for p in record.read(site["run"]).processes] == ["prefill-0", "decode-0", "router"]
    decode = after["decode-0"][0]
    assert decode is not None and ownership.stat(decode).state != "T"  # type: ignore[union-attr]
    assert got.stack_up_after is True
    assert stack("status", str(site["run"])).returncode == 0
    judged = check(site)
    assert judged.returncode == 0, judged.stdout + judged.stderr
    report = (site["tmp"] / "fault" / faultsummary.REPORT).read_text()
    assert all(f"## {name}" in report for name in by) and "Verdict: PASS" in report


def _state(pid: int) -> str | None:
    st = ownership.stat(pid)
    return None if st is None else st.state


def test_a_silent_drop_fails_as_lost_and_an_interrupted_stop_resumes_the_server(site, capsys):
    # One stack for both (each stack costs seconds): its decode server holds its first request forever.
    drop = env(STANDIN_HOLD_S="decode:0.2", STANDIN_DROP_SILENTLY="1")
    assert up(site, env_=drop).returncode == 0
    done = fault(site, "--fault", "stop-decode", "--stop-seconds", "0.5", "--recovery-bound", "20", env_=drop)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "FAIL stop-decode: requests with neither an answer nor an error" in done.stdout
    (f,) = summary(site).faults
    lost = [r for r in f.requests if faultsummary.CLASS_OF[r.outcome] == "lost"]
    assert len(lost) == 1 and lost[0].outcome == "no_answer" and f.resumed is True
    judged = check(site)
    assert judged.returncode == 1 and "lost_without_error" in judged.stdout

    # Ctrl-C while the decode server is stopped: it is resumed before the command ends (exit 130).
    decode = record.read(site["run"]).processes[1]
    assert decode.name == "decode-0" and decode.pid is not None
    proc = subprocess.Popen(fault_argv(site, "--fault", "stop-decode", "--stop-seconds", "60"), env=env(), cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while _state(decode.pid) != "T":
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert _state(decode.pid) not in ("T", None)  # resumed, and still the stack's server
    assert stack("status", str(site["run"])).returncode == 0

    # A stack that no longer runs is refused before any load, in one line.
    assert stack("down", str(site["run"]), "--grace", "2").returncode == 0
    assert main(["fault", str(site["run"]), *LOAD, "--fault", "kill-router", "--out", str(site["tmp"] / "f2")]) == 2
    assert "the stack does not run" in capsys.readouterr().err


def test_a_process_the_record_does_not_prove_ours_is_never_signalled(site, capsys):
    other = foreign()
    try:
        ticks = ownership.start_ticks(other.pid)
        forged(site["run"],
               {"name": "prefill-0", "role": "prefill", "pid": other.pid, "start_ticks": ticks},
               {"name": "decode-0", "role": "decode", "pid": other.pid, "start_ticks": ticks},
               {"name": "router", "role": "router", "pid": other.pid, "start_ticks": ticks,
                "health_url": "http://127.0.0.1:1/readiness"})
        with pytest.raises(UserError, match="left alone"):
            restart.role(record.read(site["run"]), "decode-0")
        assert main(["fault", str(site["run"]), *LOAD, "--fault", "kill-decode", "--recovery-bound", "1",
                     "--out", str(site["tmp"] / "fault")]) == 2
        err = capsys.readouterr().err
        assert "without this stack's PDREPRO_STACK_ID" in err and "nothing is signalled" in err, err
        assert not faultsummary.present(site["tmp"] / "fault")
        assert other.poll() is None, "pdrepro fault signalled a process its stack did not start"
    finally:
        kill(other)


def test_bad_input_is_one_line(tmp_path, capsys):
    out = tmp_path / "f"
    assert main(["fault", str(tmp_path), "--fault", "all", "--out", str(out)]) == 2
    assert "no stack.json there" in capsys.readouterr().err
    assert main(["fault", str(tmp_path), "--fault", "all", "--requests", "0", "--out", str(out)]) == 2
    assert "--requests 0: give a whole number" in capsys.readouterr().err
    assert main(["fault", str(tmp_path), "--fault", "all", "--recovery-bound", "nan", "--out", str(out)]) == 2
    assert "--recovery-bound nan" in capsys.readouterr().err
    assert not out.exists()
