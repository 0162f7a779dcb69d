"""Hostile RUN/arms-state.json: the arms runner (pdrepro.arms) resuming from a state generated as a valid one
with each field bent (a status or exit out of range, a bool or a float for a number, an arm named twice, named
like a path out of the run, another A/B's label, the arms' words changed, keys added), as bytes that are no
JSON at all (binary, nested past reason, NaN, a byte-order mark), and as no file (a directory, a FIFO, a link
to /dev/zero, a file far too large).

The promise: the runner returns 0, 1 or 2 (or refuses with one line naming the state file, never a traceback);
a refused state is left byte for byte as it was and no stage of any arm starts; an accepted one resumes
exactly the arms it does not record as done; nothing is written outside the run folder; nothing hangs. A runner
that trusted the file would start an arm in ../elsewhere, or skip an arm another A/B had finished."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path

from depth import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from memberhelp import member, recording

from pdrepro import arms
from pdrepro.core.errors import UserError
from pdrepro.rundir import armsstate

LABEL = "ab s: x, y"
SWEEP = ["--scenario", "s", "--model-path", "/m", "--dataset-path", "/d.json"]


def _arms(run: Path) -> list:
    return [member(run, "x", ["--scenario", "s"], SWEEP, backend="x"),
            member(run, "y", ["--scenario", "s", "--gpus", "0"], SWEEP, backend="y")]


ARMS = _arms(Path("/run"))  # their records: the state holds no member's folder


def _valid() -> dict:
    return json.loads(armsstate.ArmsState(label=LABEL, arms=tuple(a.record() for a in ARMS)).model_dump_json())


HOSTILE = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=True),
                    st.text(max_size=80), st.sampled_from(["../elsewhere", "/abs", ".", "..", "a/b", "x", "y",
                                                           "done", "running", "rendered", "", "é", "x" * 70]),
                    st.lists(st.text(max_size=5), max_size=3))
FIELDS = st.sampled_from(["name", "backend", "configuration", "stack", "sweep", "status", "exit", "reason", "extra"])


@st.composite
def bent_states(draw) -> bytes:
    data = _valid()
    for _ in range(draw(st.integers(1, 3))):
        where = draw(st.sampled_from(["arm", "top"]))
        # An earlier bend may have replaced the arms list itself: then only the top can be bent further.
        arms_left = isinstance(data.get("arms"), list) and len(data["arms"]) == 2 and \
            all(isinstance(a, dict) for a in data["arms"])
        if where == "arm" and arms_left:
            arm = data["arms"][draw(st.integers(0, 1))]
            arm[draw(FIELDS)] = draw(HOSTILE)
        else:
            data[draw(st.sampled_from(["label", "schema_version", "arms", "surprise"]))] = draw(HOSTILE)
    return json.dumps(data).encode()


def _statuses(draw_status) -> bytes:
    data = _valid()
    for arm, status in zip(data["arms"], draw_status):
        arm["status"] = status
    return json.dumps(data).encode()


@st.composite
def other_abs(draw) -> bytes:
    """A well-formed state of another A/B: another label, or the same arms started with other words."""
    data = _valid()
    change = draw(st.sampled_from(["label", "stack", "sweep", "backend", "order"]))
    if change == "label":
        data["label"] = draw(st.text(min_size=1, max_size=40).filter(lambda t: t != LABEL))
    elif change == "order":
        data["arms"].reverse()
    else:
        arm = data["arms"][draw(st.integers(0, 1))]
        arm[change] = draw(st.lists(st.text(max_size=8), max_size=3)) if change != "backend" else draw(
            st.sampled_from(["z", None]))
        if arm[change] == _valid()["arms"][0][change]:
            arm[change] = ["--other"] if change != "backend" else "w"
    arm = data["arms"][draw(st.integers(0, 1))]
    arm["status"] = draw(st.sampled_from(["pending", "done", "failed", "stopped"]))
    return json.dumps(data).encode()


RAW = st.one_of(st.binary(max_size=200), st.just(b"[" * 100_000), st.just(b'{"schema_version": NaN}'),
                st.just(b"\xef\xbb\xbf" + json.dumps(_valid()).encode()), st.just(b""))
STATES = st.one_of(bent_states(), other_abs(), RAW,
                   st.lists(st.sampled_from(["pending", "running", "done", "failed", "stopped"]), min_size=2, max_size=2)
                   .map(_statuses))


def _snapshot(root: Path) -> dict[str, bytes | None]:
    out: dict[str, bytes | None] = {}
    for p in sorted(root.rglob("*")):
        out[str(p.relative_to(root))] = p.read_bytes() if p.is_file() and not p.is_symlink() else None
    return out


def _resume(run: Path) -> tuple[int | None, str | None, list[tuple[str, Path]]]:
    calls: list[tuple[str, Path]] = []
    # Every stack fails to start: the runner records it and goes on to the next arm.
    try:
        return arms.run_arms(run, LABEL, _arms(run), command="ab", stages=recording(calls, 1),
                             say=lambda _line: None), None, calls
    except UserError as exc:
        return None, str(exc), calls


def _check_refusal(message: str, run: Path) -> None:
    assert "\n" not in message and str(armsstate.path(run)) in message, message


@settings(max_examples=examples(40, deep_count=1000))
@given(STATES)
def test_a_hostile_state_is_refused_or_resumed_as_it_says(content):
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        run = root / "run"
        run.mkdir()
        armsstate.path(run).write_bytes(content)
        before = _snapshot(root)
        status, refused, calls = _resume(run)
        if refused is not None:
            _check_refusal(refused, run)
            assert calls == [] and _snapshot(root) == before
            return
        assert status in (0, 1)
        claimed = armsstate.ArmsState.model_validate_json(content.decode("utf-8-sig"))
        undone = [a.name for a in claimed.arms if a.status != "done"]
        assert [folder for stage, folder in calls if stage == "stack up"] == [run / n for n in undone]
        after = armsstate.read(run)
        assert after is not None and after.label == LABEL
        assert {p.split("/")[0] for p in _snapshot(root)} <= {"run"}, "written outside the run"


@settings(max_examples=examples(8))
@given(st.sampled_from(["dir", "fifo", "zero", "huge"]))
def test_no_file_at_the_state_path_is_refused_on_one_line(kind):
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "run"
        run.mkdir()
        path = armsstate.path(run)
        if kind == "dir":
            path.mkdir()
        elif kind == "fifo":
            os.mkfifo(path)
        elif kind == "zero":
            path.symlink_to("/dev/zero")
        else:
            with open(path, "wb") as f:
                f.truncate(64 << 20)  # sparse: larger than any record
        status, refused, calls = _resume(run)
        assert status is None and refused is not None and calls == []
        _check_refusal(refused, run)
        with contextlib.suppress(OSError):
            assert path.is_dir() or path.is_symlink() or path.stat().st_size in (0, 64 << 20)
