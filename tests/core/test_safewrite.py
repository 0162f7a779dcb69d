"""The shared safe writer (pdrepro.core.safewrite): a link planted where it writes, or at any temporary
name, is never written through; a failure leaves no temporary file; an interruption mid-write leaves the
old file whole and nothing else; the run's own writer (rundir.contract.write_atomic) is the same writer."""

from __future__ import annotations

import os

import pytest

from pdrepro.core.errors import UserError
from pdrepro.core.safewrite import atomic, stage, write_file
from pdrepro.rundir.contract import write_atomic


def _listing(folder):
    return sorted(p.name for p in folder.iterdir())


def test_a_link_at_the_destination_is_refused_and_its_target_untouched(tmp_path):
    target = tmp_path / "outside"
    target.write_text("precious")
    run = tmp_path / "run"
    run.mkdir()
    (run / "summary.json").symlink_to(target)
    with pytest.raises(UserError, match="symlink"):
        write_atomic(run / "summary.json", "{}\n", run)
    assert target.read_text() == "precious"
    assert _listing(run) == ["summary.json"]


def test_a_link_planted_at_the_old_fixed_temporary_name_is_not_followed(tmp_path):
    # The run's writer once wrote RUN/.summary.json.tmp with a plain open: a link planted there was followed.
    target = tmp_path / "outside"
    target.write_text("precious")
    run = tmp_path / "run"
    run.mkdir()
    (run / ".summary.json.tmp").symlink_to(target)
    write_atomic(run / "summary.json", "{}\n", run)
    assert target.read_text() == "precious"
    assert (run / "summary.json").read_text() == "{}\n" and not (run / "summary.json").is_symlink()
    assert _listing(run) == [".summary.json.tmp", "summary.json"]


def test_an_exception_mid_write_leaves_the_old_file_and_no_temporary(tmp_path):
    path = tmp_path / "data.json"
    path.write_text("old")
    with pytest.raises(KeyboardInterrupt):
        with atomic(path) as handle:
            handle.write(b"half of the new")
            raise KeyboardInterrupt
    assert path.read_text() == "old"
    assert _listing(tmp_path) == ["data.json"]


def test_a_missing_folder_is_one_line_naming_it(tmp_path):
    with pytest.raises(UserError) as info:
        write_file(tmp_path / "nowhere" / "x.json", "{}")
    assert "nowhere" in str(info.value) and "\n" not in str(info.value)


def test_a_directory_or_fifo_at_the_destination_is_refused(tmp_path):
    (tmp_path / "d").mkdir()
    os.mkfifo(tmp_path / "f")
    for name, why in (("d", "directory"), ("f", "not a regular file")):
        with pytest.raises(UserError, match=why):
            write_file(tmp_path / name, "x")
    assert _listing(tmp_path) == ["d", "f"]


def test_a_stage_moves_only_on_success_and_never_over_a_link(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    target = tmp_path / "outside"
    target.write_text("precious")
    (out / "b.json").symlink_to(target)
    with pytest.raises(UserError, match="symlink"):
        with stage(out, "test") as staged:
            (staged / "a.json").write_text("a")
            (staged / "b.json").write_text("b")
    assert target.read_text() == "precious"
    assert _listing(out) == ["b.json"]  # nothing moved, the stage gone
    (out / "b.json").unlink()
    with stage(out, "test") as staged:
        (staged / "a.json").write_text("a")
    assert _listing(out) == ["a.json"]
