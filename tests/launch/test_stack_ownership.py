"""`stack down`, `stack status` and `stack up`'s advice on records that name processes the stack did not
start: a sleep the test started, init, the test itself, a pid handed to another process, another boot, a
changed command line. None of them may be signalled; each is named, and the command exits 2 (or 0 where
the recorded process is simply gone)."""

from __future__ import annotations

import json
import os
import subprocess
import time

from stackhelp import REPO, STACK_ID, alive, env, foreign, forged, kill, one_line_error, site, stack, up, wait_gone

from pdrepro.launch.stack import ownership, record

__all__ = ["site"]


def _entry(proc: subprocess.Popen, **change) -> dict:
    """A record entry that names ``proc`` exactly as /proc shows it (pid, start time, command line)."""
    return {"pid": proc.pid, "start_ticks": ownership.start_ticks(proc.pid), "argv": tuple(ownership.cmdline(proc.pid)),
            **change}


def test_a_foreign_process_with_its_exact_facts_but_no_marker_is_named_and_left_alone(tmp_path):
    sleeper = foreign("sleep", "300")
    try:
        forged(tmp_path, _entry(sleeper))
        down = stack("down", str(tmp_path), "--grace", "1")
        assert down.returncode == 2, down.stdout + down.stderr
        line = one_line_error(down)
        assert f"pid {sleeper.pid}" in line and "without this stack's PDREPRO_STACK_ID" in line
        status = stack("status", str(tmp_path))
        assert status.returncode == 2 and "not ours" in status.stdout and " running " not in status.stdout
        assert record.read(tmp_path).stopped_at is None  # nothing was stopped
        assert sleeper.poll() is None, "a process the stack did not start was signalled"
    finally:
        kill(sleeper)


def test_init_the_caller_and_the_callers_session_are_never_signalled(tmp_path):
    # The test's own process is the parent of `stack down`; a marked sleep in the test's session is in
    # the session of `stack down` too. Both carry what a record could copy, neither may be touched.
    same_session = subprocess.Popen(["sleep", "300"], env=env(**{ownership.MARKER: STACK_ID}))
    try:
        me = os.getpid()
        forged(tmp_path, {"pid": 1, "start_ticks": ownership.start_ticks(1)},
               {"pid": me, "start_ticks": ownership.start_ticks(me), "argv": tuple(ownership.cmdline(me))},
               _entry(same_session), {"pid": 0, "start_ticks": 0}, {"pid": -1, "start_ticks": 0})
        down = stack("down", str(tmp_path), "--grace", "1")
        assert down.returncode == 2, down.stdout + down.stderr
        line = one_line_error(down)
        assert "(pid 1): is init; never signalled" in line
        assert f"(pid {me}): is one of the processes that started this command" in line
        assert f"(pid {same_session.pid}): is in this command's process group" in line
        assert "(pid 0): names no single process" in line and "(pid -1): names no single process" in line
        assert same_session.poll() is None
    finally:
        same_session.kill()
        same_session.wait()


def test_a_recycled_pid_and_another_boot_are_not_running(tmp_path):
    sleeper = foreign("sleep", "300", **{ownership.MARKER: STACK_ID})
    try:
        ticks = ownership.start_ticks(sleeper.pid)
        forged(tmp_path / "recycled", _entry(sleeper, start_ticks=ticks + 1))
        down = stack("down", str(tmp_path / "recycled"), "--grace", "1")
        assert down.returncode == 0, down.stderr
        assert "is now another process, sleep, started at another time: left alone" in down.stdout
        forged(tmp_path / "reboot", _entry(sleeper), boot_id="00000000-0000-0000-0000-000000000000")
        down = stack("down", str(tmp_path / "reboot"), "--grace", "1")
        assert down.returncode == 0 and "started before this host last booted" in down.stdout
        status = stack("status", str(tmp_path / "reboot"))
        assert status.returncode == 1 and "not running" in status.stdout
        assert alive(sleeper.pid, ticks)
    finally:
        kill(sleeper)


def test_a_changed_command_line_fails_the_proof(tmp_path):
    marked = foreign("sleep", "300", **{ownership.MARKER: STACK_ID})
    try:
        forged(tmp_path, _entry(marked, argv=("sleep", "301")))
        down = stack("down", str(tmp_path), "--grace", "1")
        assert down.returncode == 2
        assert "with a command line other than the recorded one" in one_line_error(down)
        assert marked.poll() is None
    finally:
        kill(marked)


def test_a_process_that_passes_the_proof_is_stopped_and_its_unmarked_group_member_is_not(tmp_path):
    # The positive control: marked, same start time and command line, so ours; it runs a child that
    # dropped its environment (env -i) in its group: a group member nobody proved, left alone.
    leader = foreign("sh", "-c", "env -i sleep 300 & exec sleep 299", **{ownership.MARKER: STACK_ID})
    try:
        members: list[int] = []
        deadline = time.monotonic() + 10
        while not (members and ownership.cmdline(leader.pid) == ("sleep", "299")) and time.monotonic() < deadline:
            time.sleep(0.05)
            members = [p for p in ownership.pids() if (st := ownership.stat(p)) and st.pgid == leader.pid
                       and p != leader.pid and ownership.cmdline(p) == ("sleep", "300")]
        assert members and ownership.marker(members[0]) is None, "the unmarked child did not start"
        forged(tmp_path, _entry(leader))
        down = stack("down", str(tmp_path), "--grace", "2")
        assert down.returncode == 2, down.stdout + down.stderr
        assert "stopped (SIGTERM)" in down.stdout
        assert f"(pid {members[0]}): is in prefill-0's process group without this stack's" in one_line_error(down)
        leader.wait(timeout=5)
        assert wait_gone(members, 0.5) == members, "a group member nobody proved was signalled"
    finally:
        kill(leader)  # the whole group, the unmarked child with it


def test_descendants_that_left_the_group_are_found_by_the_marker(site):
    started = up(site, env_=env(STANDIN_CHILD="setsid"))
    assert started.returncode == 0, started.stdout + started.stderr
    rec = record.read(site["run"])
    recorded = {p.pid for p in rec.processes}
    forked = [pid for pid in ownership.marked(rec.stack_id) if pid not in recorded]
    assert len(forked) == 2 and all(ownership.stat(pid).sid == pid for pid in forked)  # sessions of their own
    # The prefill dies the hard way; its child lives on outside every group the record names.
    os.kill(rec.processes[0].pid, 9)
    assert wait_gone([rec.processes[0].pid]) == []
    down = stack("down", str(site["run"]), "--grace", "2")
    assert down.returncode == 0, down.stdout + down.stderr
    assert "prefill-0" in down.stdout and "found by its marker: sglang::sched" in down.stdout
    assert wait_gone(forked) == [] and ownership.marked(rec.stack_id) == []


def test_up_never_advises_stopping_a_process_that_is_not_ours(site):
    sleeper = foreign("sleep", "300")
    try:
        forged(site["run"], _entry(sleeper))
        refused = up(site)
        assert refused.returncode == 2
        line = one_line_error(refused)
        assert "cannot be trusted: move it away or choose another --out" in line and "stack down" not in line
        assert sleeper.poll() is None
    finally:
        kill(sleeper)
    # A stack of ours in the folder: then `stack down` is the advice.
    record.path(site["run"]).unlink()
    assert up(site).returncode == 0
    again = up(site)
    assert again.returncode == 2 and f"stop it first: pdrepro stack down {site['run']}" in one_line_error(again)


def test_a_version_1_record_proves_nothing_and_a_broken_one_is_one_line(tmp_path):
    # The recorded runs' records hold no stack id: read, but what they name is never signalled.
    recorded = REPO / "tests/recorded/h200-onebox-host-sglang-0.5.15.post1/stack.json"
    old = json.loads(recorded.read_text())
    assert old["schema_version"] == 1 and "stack_id" not in old
    sleeper = foreign("sleep", "300")
    try:
        old["boot_id"] = ownership.boot_id()
        old["processes"][0].update(pid=sleeper.pid, start_ticks=ownership.start_ticks(sleeper.pid),
                                   argv=list(ownership.cmdline(sleeper.pid)))
        (tmp_path / record.FILE_NAME).write_text(json.dumps(old))
        down = stack("down", str(tmp_path), "--grace", "1")
        assert down.returncode == 2
        assert f"(pid {sleeper.pid}): runs (sleep), but a version 1 record holds no stack id" in one_line_error(down)
        assert sleeper.poll() is None
    finally:
        kill(sleeper)
    (tmp_path / record.FILE_NAME).write_text('{"schema_version": 2, "scenario": "x"}')
    down = stack("down", str(tmp_path))
    assert down.returncode == 2 and "is written by `pdrepro stack up`" in one_line_error(down)
    (tmp_path / record.FILE_NAME).write_text("[" * 100000)
    status = stack("status", str(tmp_path))
    assert status.returncode == 2 and "not readable JSON" in one_line_error(status)
