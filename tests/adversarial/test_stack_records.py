"""Hostile stack records: `pdrepro stack down` and `stack status` on records generated to point at live
processes the test owns but no launcher started (a sleep in a session of its own, one carrying another
stack's marker, one in the test's own session carrying this record's marker), at init, pid 0, negative and
huge pids, the test itself and its parent, a pid that has ended, with start times, command lines, boot ids
and stack ids exact or off, and at records whose fields have the wrong types.

The promise: exit 0, 1 or 2 only; one line on stderr on 2, never a traceback; nothing written outside the
run folder, nothing at all by `status`; and no process the test owns receives a signal (each is alive after
every example). The old launcher failed this on the first example naming a live pid with its true start
time: it signalled that pid's whole process group."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from depth import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from pdrepro.cli import main
from pdrepro.launch.stack import ownership, record

STACK_ID = "a" * 32           # the record's marker, carried only by a process in the test's own session
OTHER_STACK = "b" * 32        # another stack's marker, never a generated record's


def _sleep(session_of_its_own: bool, marker: str | None) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k != ownership.MARKER}
    if marker:
        env[ownership.MARKER] = marker
    return subprocess.Popen(["sleep", "3600"], env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=session_of_its_own)


class Owned:
    """The test's own processes, started afresh whenever one has ended, so that a signal sent in one
    example fails that example (and its shrinking) alone."""

    KINDS = {"plain": (True, None), "other-stack": (True, OTHER_STACK), "same-session": (False, STACK_ID)}

    def __init__(self) -> None:
        self.procs: dict[str, subprocess.Popen] = {}
        ended = subprocess.Popen(["true"])
        ended.wait()
        self.fixed = {"self": os.getpid(), "parent": os.getppid(), "init": 1, "zero": 0, "negative": -1,
                      "huge": 2**40, "ended": ended.pid}

    def refresh(self) -> dict[str, int]:
        for name, (own_session, marker) in self.KINDS.items():
            if name not in self.procs or self.procs[name].poll() is not None:
                self.procs[name] = _sleep(own_session, marker)
        return {**{name: p.pid for name, p in self.procs.items()}, **self.fixed}

    def close(self) -> None:
        for p in self.procs.values():
            p.kill()
            p.wait()


@pytest.fixture(scope="module")
def owned():
    made = Owned()
    yield made
    made.close()


def _entry(pids: dict[str, int]):
    def build(target, ticks, argv, name, role, port):
        pid = pids.get(target)
        exact = ownership.start_ticks(pid) if pid is not None else None
        real = ownership.cmdline(pid) if pid is not None else None
        # Mostly the true start time and command line: the claims a plain pid check cannot tell from ours.
        start = exact if ticks == "exact" else None if ticks == "none" else (exact or 0) + ticks
        return {"name": name, "role": role, "pid": pid, "port": port, "start_ticks": start,
                "argv": list(real or ()) if argv == "exact" else argv,
                "env": {}, "log": "logs/x.log", "health_url": f"http://127.0.0.1:{port}/health",
                "started_at": "2026-12-01T00:00:00+00:00"}
    return st.builds(build, st.sampled_from([*pids, None]),
                     st.one_of(st.sampled_from(["exact", "exact", "exact", "none"]), st.integers(-3, 3)),
                     st.one_of(st.just("exact"), st.just("exact"), st.lists(st.text(max_size=8), max_size=3)),
                     st.sampled_from(["prefill-0", "decode-0", "router", "x"]),
                     st.sampled_from(["prefill", "decode", "router"]), st.integers(1, 65535))


# A field set to a value of the wrong type or out of range: the record is refused, nothing is signalled.
_WRONG = st.sampled_from([("pid", "1"), ("pid", 1.5), ("pid", True), ("pid", [1]), ("pid", 10**30),
                          ("start_ticks", "x"), ("argv", "sleep 3600"), ("stack_id", ""), ("stack_id", "A" * 32),
                          ("stack_id", None), ("boot_id", None), ("processes", {}), ("schema_version", 1)])


@st.composite
def records(draw, pids: dict[str, int]):
    entries = draw(st.lists(_entry(pids), max_size=4))
    data = {"schema_version": draw(st.sampled_from([2, 2, 1])), "scenario": "x",
            "stack_id": draw(st.sampled_from([STACK_ID, "c" * 32])),
            "target": "onebox", "launcher": "host",
            "boot_id": draw(st.sampled_from([ownership.boot_id(), "00000000-0000-0000-0000-000000000000"])),
            "python": sys.executable, "python_version": "3", "packages": {}, "modules": {}, "processes": entries}
    if draw(st.booleans()) and draw(st.booleans()):
        key, value = draw(_WRONG)
        target = data["processes"][0] if key in ("pid", "start_ticks", "argv") and entries else data
        target[key] = value
    return data


def _run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@settings(max_examples=examples(40, deep_count=1000))
@given(data=st.data())
def test_hostile_records_signal_nothing_and_say_one_line(owned, data):
    pids = owned.refresh()
    rec = data.draw(records(pids))
    verb = data.draw(st.sampled_from(["down", "status"]))
    with tempfile.TemporaryDirectory() as tmp:
        outside, run = Path(tmp), Path(tmp) / "run"
        run.mkdir()
        (run / record.FILE_NAME).write_text(json.dumps(rec))
        (outside / "neighbour.txt").write_text("not the run's")
        before, run_before = _snapshot(outside), _snapshot(run)
        code, out, err = _run(["stack", verb, str(run), *(["--grace", "0.2"] if verb == "down" else [])])
        assert code in (0, 1, 2), (code, out, err)
        assert "Traceback" not in out + err
        if code == 2:
            assert len(err.strip().splitlines()) == 1, err
        after = _snapshot(outside)
        assert {k: v for k, v in after.items() if not k.startswith("run/")} == \
               {k: v for k, v in before.items() if not k.startswith("run/")}, "written outside the run"
        if verb == "status":
            assert _snapshot(run) == run_before, "status wrote into the run it reports on"
    for name, proc in owned.procs.items():
        assert proc.poll() is None, f"the test's {name} process was signalled (record {rec})"
