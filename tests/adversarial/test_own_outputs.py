"""A runner never writes over a file it did not write (issue 33, item 4; rundir.ownoutputs), whatever happened
to its outputs between two of its runs: left alone, deleted, rewritten with the same bytes, edited, cut short,
grown, replaced by a link, a folder or a FIFO, or the record of what it wrote edited or broken. Its outputs are
then written (all of them) only where each is absent, its own unedited bytes, or the very bytes about to be
written; anything else is refused with one line naming the file, and then nothing at all is written."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from depth import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from pdrepro.core.errors import UserError
from pdrepro.rundir import ownoutputs

# Seeded in `make test`; the deep profile runs ten times as many.
EXAMPLES_SEED = 30  # the seeded count; the deep profile runs ten times it (depth.examples)
NAMES = ("summary.json", "report.md", "plots/load.png")
CHANGES = ("none", "delete", "same-bytes", "edit", "truncate", "append", "link", "dir", "fifo", "new-bytes")
OURS = ("none", "delete", "same-bytes", "new-bytes")  # what leaves a file the runner may write


def _first(run: Path) -> dict[str, bytes]:
    (run / "plots").mkdir(parents=True, exist_ok=True)
    texts = {name: f"first {name}\n".encode() for name in NAMES}
    ownoutputs.write_outputs(run, texts, "tune")
    return texts


def _change(run: Path, name: str, how: str, new: bytes, outside: Path) -> None:
    p = run / name
    if how == "delete":
        p.unlink()
    elif how == "same-bytes":
        p.write_bytes(p.read_bytes())
    elif how == "edit":
        p.write_bytes(p.read_bytes().replace(b"first", b"mine!"))
    elif how == "truncate":
        p.write_bytes(p.read_bytes()[:3])
    elif how == "append":
        p.write_bytes(p.read_bytes() + b"my notes\n")
    elif how == "link":
        p.unlink()
        p.symlink_to(outside)
    elif how == "dir":
        p.unlink()
        p.mkdir()
    elif how == "fifo":
        p.unlink()
        os.mkfifo(p)
    elif how == "new-bytes":
        p.write_bytes(new)  # already what this run is about to write


def _state(run: Path) -> dict[str, str]:
    out = {}
    for p in sorted(run.rglob("*")):
        out[str(p.relative_to(run))] = ("link" if p.is_symlink() else p.read_bytes().hex() if p.is_file() else "other")
    return out


@settings(max_examples=examples(EXAMPLES_SEED))
@given(changes=st.dictionaries(st.sampled_from(NAMES), st.sampled_from(CHANGES), max_size=3))
def test_a_runner_writes_only_over_its_own_outputs(tmp_path_factory, changes):
    run = tmp_path_factory.mktemp("run")
    outside = tmp_path_factory.mktemp("outside") / "victim"
    outside.write_text("not the runner's\n")
    _first(run)
    new = {name: f"second {name}\n".encode() for name in NAMES}
    for name, how in changes.items():
        _change(run, name, how, new[name], outside)
    before = _state(run)
    foreign = [name for name in NAMES if changes.get(name, "none") not in OURS]
    if foreign:
        with pytest.raises(UserError) as refused:
            ownoutputs.write_outputs(run, new, "tune")
        message = str(refused.value)
        assert "\n" not in message and str(run / foreign[0]) in message
        assert _state(run) == before  # nothing written, not even the files that were its own
    else:
        ownoutputs.write_outputs(run, new, "tune")
        assert {name: (run / name).read_bytes() for name in NAMES} == new
        # Written by this run, they are its own for the next.
        ownoutputs.write_outputs(run, {name: b"third\n" for name in NAMES}, "tune")
    assert outside.read_text() == "not the runner's\n"


def test_a_file_there_before_any_record_is_not_the_runners(tmp_path):
    (tmp_path / "report.md").write_text("written by a person, or by a release that kept no record\n")
    with pytest.raises(UserError, match=r"report\.md: not written by pdrepro ab .* move that file aside"):
        ownoutputs.refuse_foreign(tmp_path, ("report.md",), "ab")
    ownoutputs.refuse_foreign(tmp_path, ("summary.json",), "ab")  # absent: free to write


@pytest.mark.parametrize("ledger", ["{", "[]", '{"files": {"../x": "' + "0" * 64 + '"}}',
                                    '{"files": {"report.md": "abc"}}', '{"files": {}, "more": 1}'])
def test_a_broken_record_of_outputs_is_one_line_and_writes_nothing(tmp_path, ledger):
    _first(tmp_path)
    ownoutputs.path(tmp_path).write_text(ledger)
    before = _state(tmp_path)
    with pytest.raises(UserError) as refused:
        ownoutputs.write_outputs(tmp_path, {"report.md": b"second\n"}, "tune")
    assert str(ownoutputs.path(tmp_path)) in str(refused.value) and "\n" not in str(refused.value)
    assert _state(tmp_path) == before


def test_a_record_that_names_other_bytes_does_not_make_an_edit_the_runners(tmp_path):
    _first(tmp_path)
    (tmp_path / "report.md").write_text("edited\n")
    data = json.loads(ownoutputs.path(tmp_path).read_text())
    assert set(data["files"]) == set(NAMES)
    with pytest.raises(UserError, match="report.md: not written by pdrepro tune"):
        ownoutputs.write_outputs(tmp_path, {"report.md": b"second\n"}, "tune")
    assert (tmp_path / "report.md").read_text() == "edited\n"
