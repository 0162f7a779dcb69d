"""Hostile RUN/compare.json (the record of which arms of `pdrepro compare` are done): whatever the file holds
(not JSON, deep nesting, wrong shapes, another scenario, huge, a FIFO or a link), opening it either resumes a
run of this scenario or stops with one UserError naming the file; never another exception, and nothing is
written over a file that is not this run's record."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from pdrepro.core.errors import UserError
from pdrepro.rundir import comparestate

FP = "a" * 64
NAMES = ["1P1D", "2-regular"]
ARM = st.fixed_dictionaries({"configuration": st.sampled_from([*NAMES, "3P3D", ""])},
                            optional={"state": st.sampled_from(["pending", "running", "done", "failed", "won", 3]),
                                      "exit_status": st.one_of(st.none(), st.integers(-5, 300), st.text(max_size=3)),
                                      "seconds": st.one_of(st.none(), st.floats(allow_nan=True), st.just("x")),
                                      "extra": st.integers()})
RECORD = st.fixed_dictionaries({"schema_version": st.sampled_from([1, 2, "1"]),
                                "scenario": st.sampled_from(["s", "other", 5]),
                                "scenario_fingerprint": st.sampled_from([FP, "b" * 64, ""]),
                                "arms": st.lists(ARM, max_size=3)})
TEXT = st.one_of(
    RECORD.map(json.dumps),
    st.text(max_size=80),
    st.integers(1, 3).map(lambda n: "[" * (2000 * n) + "]" * (2000 * n)),  # past the JSON reader's recursion
    st.just('{"arms": ' + "1" * 50 + "}"),
    st.just(json.dumps({"schema_version": 1, "scenario": "s", "scenario_fingerprint": FP,
                        "arms": [{"configuration": n, "state": "done"} for n in NAMES]})),
)


@settings(max_examples=60)
@given(text=TEXT)
def test_any_file_resumes_or_is_refused_in_one_line(text):
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp)
        path = run / comparestate.FILE_NAME
        path.write_text(text)
        before = path.read_bytes()
        try:
            book = comparestate.open_state(run, "s", FP, NAMES)
        except UserError as exc:
            assert str(exc).startswith(str(path)) and "\n" not in str(exc)
            assert path.read_bytes() == before
            return
        assert [a.configuration for a in book.state.arms] == NAMES and book.state.scenario_fingerprint == FP
        assert sorted(os.listdir(run)) == [comparestate.FILE_NAME]


@settings(max_examples=5)
@given(kind=st.sampled_from(["fifo", "dangling", "folder"]))
def test_a_record_that_is_not_a_file_is_refused_without_a_hang(kind):
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp)
        path = run / comparestate.FILE_NAME
        if kind == "fifo":
            os.mkfifo(path)
        elif kind == "dangling":
            path.symlink_to(run / "nowhere")
        else:
            path.mkdir()
        try:
            comparestate.open_state(run, "s", FP, NAMES)
        except UserError as exc:
            assert "\n" not in str(exc)
        else:
            raise AssertionError(f"a {kind} was taken as the compare state")
        assert os.path.lexists(path) and sorted(os.listdir(run)) == [comparestate.FILE_NAME]


def test_a_fresh_run_is_written_and_each_arm_recorded(tmp_path):
    book = comparestate.open_state(tmp_path, "s", FP, NAMES)
    book.start("1P1D")
    book.end("1P1D", 0)
    book.start("2-regular")
    book.end("2-regular", 1)
    again = comparestate.open_state(tmp_path, "s", FP, NAMES)
    assert again.done("1P1D") and not again.done("2-regular")
    assert [a.exit_status for a in again.state.arms] == [0, 1]
