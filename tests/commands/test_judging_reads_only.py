"""Judging only reads (issue 33, item 4), as a user meets it, on copies of the real GPU runs under tests/recorded/
(an A/B, a tune, a comparison of two rates, a load sweep): each kind's judge (`ab --judge`, `tune --judge` and its
older name `tune --collect`, `compare --judge`) and `pdrepro check` leave the folder as it was (names, sizes, times
and bytes of every entry), give the verdict and exit status `pdrepro check` gives its members, print it as JSON
with --json, write a report only where --report names a file (never inside the run), and give the same verdict on
a read-only copy. Tests run as root in CI, where chmod does not stop a write: the snapshot is the proof there, the
read-only copy is one where the user is not root."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
from pathlib import Path

import pytest
from clihelp import pdrepro

REPO = Path(__file__).resolve().parents[2]
RECORDED = REPO / "tests" / "recorded"
AB = RECORDED / "h200-ab-mooncake-tcp-vs-nixl-sglang-0.5.15.post1" / "ab"
TUNE = RECORDED / "h200-tune-0.5b-mooncake-tcp-sglang-0.5.15.post1" / "tune"
COMPARE = RECORDED / "h200-compare-7b-sglang-0.5.15.post1" / "cmp"
LOAD = RECORDED / "h200-load-0.5b-mooncake-tcp-sglang-0.5.15.post1" / "load"


def snapshot(root: Path) -> dict[str, tuple]:
    """Every entry under ``root`` and ``root`` itself, links not followed: its kind, mode, size, mtime and, for a
    file, its bytes' digest; a link, its target."""
    out = {}
    for p in [root, *sorted(root.rglob("*"))]:
        st = os.lstat(p)
        key = str(p.relative_to(root))
        if stat.S_ISLNK(st.st_mode):
            out[key] = ("link", os.readlink(p))
        elif stat.S_ISREG(st.st_mode):
            out[key] = ("file", st.st_mode, st.st_size, st.st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest())
        else:
            out[key] = ("dir", st.st_mode, st.st_mtime_ns)
    return out


def _copy(source: Path, dest: Path) -> Path:
    shutil.copytree(source, dest, symlinks=True)
    return dest


def _read_only(root: Path) -> None:
    for p in [root, *root.rglob("*")]:
        if not p.is_symlink():
            p.chmod(p.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


def _writable(root: Path) -> None:
    for p in [root, *root.rglob("*")]:
        if not p.is_symlink():
            p.chmod(p.stat().st_mode | stat.S_IWUSR)


def _members(kind: str, run: Path) -> list[Path]:
    """The folders `pdrepro check` judges one by one: an A/B's arms, a tune's runs, a comparison's rates; a
    load sweep is one run."""
    if kind == "ab":
        return [run / "mooncake_tcp", run / "nixl"]
    if kind == "tune":
        return sorted(p for p in run.iterdir() if (p / "scenario.yaml").is_file() and (p / "bench").is_dir())
    if kind == "compare":
        return sorted(p for p in run.iterdir() if (p / "scenario.yaml").is_file())
    return [run]


def _judge(kind: str, run: Path, *more: str):
    if kind == "load":
        return pdrepro("check", run, *more)
    return pdrepro(kind, "--judge", run, *more)


def _check_status(members: list[Path]) -> int:
    """The status the judge must give: `pdrepro check`'s worst over the members."""
    return max(pdrepro("check", m).rc for m in members)


KINDS = {"ab": AB, "tune": TUNE, "compare": COMPARE, "load": LOAD}


@pytest.mark.parametrize("kind", list(KINDS))
def test_the_judge_writes_nothing_and_gives_checks_verdict(kind, tmp_path):
    run = _copy(KINDS[kind], tmp_path / kind)
    before = snapshot(run)
    members = _members(kind, run)
    assert members, "a recorded run with nothing to judge proves nothing"
    want = _check_status(members)
    assert want == 0  # the recorded runs pass, as the GPU machines judged them

    text = _judge(kind, run)
    assert text.rc == want, text.err[-2000:]
    assert "Traceback" not in text.err and text.out.strip()
    report = tmp_path / "verdict.md"
    scripted = _judge(kind, run, "--json", "--report", report)
    assert scripted.rc == want, scripted.err[-2000:]
    data = json.loads(scripted.out)
    # A tune's verdict is its runs' (its summary ranks settings and names each run's verdict).
    summary = data["summary"] if kind in ("tune", "ab") else data
    passed = all(r["passed"] for t in summary["settings"] for r in t["runs"]) if kind == "tune" else data["passed"]
    assert passed is (want == 0) and data["passed"] is (want == 0) and data["exit_status"] == want
    # The report is the text the judge prints between the line naming what it judges and its count, in the file
    # the user named and nowhere else (a runner's report.md holds the same text).
    printed = text.out.rstrip("\n").splitlines()
    assert printed[0].startswith("judging ") and printed[-1] == data["count"] or kind == "compare"
    assert report.read_text().rstrip("\n") in text.out
    assert snapshot(run) == before, f"{kind}: judging changed the folder it judged"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([kind, "verdict.md"])


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_report_asked_for_inside_the_run_is_refused_and_nothing_is_written(kind, tmp_path):
    run = _copy(KINDS[kind], tmp_path / kind)
    before = snapshot(run)
    target = run / "mine.md"
    refused = _judge(kind, run, "--report", target)
    command = "check" if kind == "load" else kind
    errors = [line for line in refused.err.splitlines() if line.startswith(f"pdrepro {command}: error:")]
    assert refused.rc == 2 and len(errors) == 1 and "Traceback" not in refused.err, refused.err
    assert f"--report {target}: is inside {run}" in errors[0] and "outside the run" in errors[0]
    assert snapshot(run) == before


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_read_only_copy_gets_the_same_verdict(kind, tmp_path):
    run = _copy(KINDS[kind], tmp_path / kind)
    writable = _judge(kind, run, "--json")
    _read_only(run)
    try:
        before = snapshot(run)
        if os.geteuid() != 0:  # root writes through any mode: the snapshot is the proof there
            with pytest.raises(PermissionError):
                (run / "probe").write_text("x")
        judged = _judge(kind, run, "--json")
        assert (judged.rc, json.loads(judged.out)) == (writable.rc, json.loads(writable.out)), judged.err[-2000:]
        assert snapshot(run) == before
    finally:
        _writable(run)


def test_tune_collect_is_the_same_judge_as_tune_judge(tmp_path):
    run = _copy(TUNE, tmp_path / "tune")
    before = snapshot(run)
    judged, collected = pdrepro("tune", "--judge", run, "--json"), pdrepro("tune", "--collect", run, "--json")
    assert judged.rc == collected.rc == 0 and json.loads(judged.out) == json.loads(collected.out)
    overlay = tmp_path / "best.yaml"
    assert pdrepro("tune", "--collect", run, "--overlay", overlay).rc == 0
    assert overlay.read_text().rstrip().endswith("{}")  # no setting left the baseline's noise on the H200
    assert snapshot(run) == before


@pytest.mark.parametrize("argv, says", [
    (["ab", "--json"], "--json goes with --judge RUN"),
    (["tune", "--report", "x.md"], "--report goes with --judge RUN"),
    (["compare", "--json"], "--json goes with --judge RUN"),
    (["tune", "--overlay", "x.yaml"], "--overlay FILE goes with --judge RUN"),
])
def test_verdict_options_without_judge_are_refused_in_one_line(argv, says):
    done = pdrepro(*argv)
    errors = [line for line in done.err.splitlines() if line.startswith(f"pdrepro {argv[0]}: error:")]
    assert done.rc == 2 and len(errors) == 1 and says in errors[0], done.err
