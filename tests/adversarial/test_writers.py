"""Writers never clobber or follow (issue 22, item 8), under hostile folders: whatever is planted where a
command writes (a file, a link to a file or a folder outside, a dangling link, a folder, a FIFO, a link at
the writer's old fixed temporary name), the command exits 0, 1 or 2 with one line on 2 and no traceback, no
link's target changes, nothing appears outside the folder, and no temporary file or stage is left behind.

The strategies would have found what was fixed: the run's writer followed a link planted at
RUN/.summary.json.tmp, and offline-model wrote through links and over a model it found in its folder."""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import shutil
from pathlib import Path

import pytest
from depth import examples
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pdrepro.cli import main

PLANTS = ("file", "link-to-file", "link-to-dir", "dangling-link", "dir", "fifo")

# What analyze writes into a run, the temporary names its writers used, and a plot.
ANALYZE_NAMES = ("summary.json", "report.md", "summary.csv", ".summary.json.tmp", ".report.md.tmp",
                 "plots/bandwidth.png")
# What offline-model writes into --out (and its dataset, named data.json here).
MODEL_NAMES = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "model.safetensors.tmp",
               "../data.json")
SMALL = ["--vocab-size", "1000", "--intermediate-size", "64", "--max-positions", "2048", "--conversations", "3"]


def _plants(names):
    return st.dictionaries(st.sampled_from(names), st.sampled_from(PLANTS), min_size=1, max_size=4)


def _snapshot(folder: Path) -> dict[str, str]:
    """Every entry under ``folder`` (links not followed) with its content's hash or its kind."""
    out = {}
    for p in sorted(folder.rglob("*")):
        if p.is_symlink():
            out[str(p.relative_to(folder))] = "link:" + os.readlink(p)
        elif p.is_file():
            out[str(p.relative_to(folder))] = hashlib.sha256(p.read_bytes()).hexdigest()
        else:
            out[str(p.relative_to(folder))] = "other"
    return out


def _plant(where: Path, kind: str, outside: Path) -> None:
    where.parent.mkdir(parents=True, exist_ok=True)
    if kind == "file":
        where.write_text("planted by the test")
    elif kind == "link-to-file":
        where.symlink_to(outside / "precious.txt")
    elif kind == "link-to-dir":
        where.symlink_to(outside / "folder", target_is_directory=True)
    elif kind == "dangling-link":
        where.symlink_to(outside / "nothing-here")
    elif kind == "dir":
        where.mkdir()
    else:
        os.mkfifo(where)


def _outside(root: Path) -> Path:
    outside = root / "outside"
    (outside / "folder").mkdir(parents=True)
    (outside / "precious.txt").write_text("must not change")
    (outside / "folder" / "kept.txt").write_text("must not change either")
    return outside


def _run(*args) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        rc = main([str(a) for a in args])
    return rc, err.getvalue()


def _holds_the_promise(rc: int, err: str, command: str) -> None:
    assert rc in (0, 1, 2), (rc, err)
    assert "Traceback" not in err, err
    if rc == 2:
        errors = [line for line in err.splitlines() if line.startswith(f"pdrepro {command}: error:")]
        assert len(errors) == 1, err


def _no_leftovers(folder: Path, before: set[str]) -> None:
    # Only names the test planted may start with a dot: the writers' temporaries and stages are gone.
    left = {str(p.relative_to(folder)) for p in folder.rglob(".*")} - before
    assert not left, left


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    from runbuilder import build_run

    from pdrepro.scenario.model import load_scenario

    root = tmp_path_factory.mktemp("template")
    build_run(root / "run", load_scenario("h20-qwen3-235b-1p1d"))
    return root / "run"


@settings(max_examples=examples(4))
@given(plants=_plants(ANALYZE_NAMES))
@example(plants={".summary.json.tmp": "link-to-file"})  # the fault fixed: the old writer followed it
@example(plants={"summary.json": "link-to-file", "report.md": "fifo"})
def test_analyze_never_writes_through_what_is_planted_in_the_run(template, tmp_path_factory, plants):
    root = tmp_path_factory.mktemp("analyze")
    outside = _outside(root)
    run = root / "run"
    shutil.copytree(template, run)
    for name, kind in plants.items():
        _plant(run / name, kind, outside)
    planted = {n for n in (str(p.relative_to(run)) for p in run.rglob(".*"))}
    before = _snapshot(outside)
    rc, err = _run("analyze", run)
    _holds_the_promise(rc, err, "analyze")
    assert _snapshot(outside) == before, "a link's target or the folder outside changed"
    assert sorted(p.name for p in root.iterdir()) == ["outside", "run"]
    for name, kind in plants.items():
        if kind.startswith(("link", "dangling")) and os.path.lexists(run / name):
            assert (run / name).is_symlink()  # refused or replaced, never written through
    _no_leftovers(run, planted)


@settings(max_examples=examples(5))
@given(plants=_plants(MODEL_NAMES), force=st.booleans())
@example(plants={"config.json": "link-to-file"}, force=True)  # the faults fixed: written through,
@example(plants={"model.safetensors": "file"}, force=False)  # and a model found in the folder overwritten
def test_offline_model_never_clobbers_or_follows(tmp_path_factory, plants, force):
    root = tmp_path_factory.mktemp("offline")
    outside = _outside(root)
    out = root / "work" / "model"
    out.mkdir(parents=True)
    for name, kind in plants.items():
        _plant(out / name, kind, outside)
    mine = _snapshot(root / "work")
    before = _snapshot(outside)
    rc, err = _run("offline-model", "--out", out, "--dataset", root / "work" / "data.json", *SMALL,
                   *(["--force"] if force else []))
    _holds_the_promise(rc, err, "offline-model")
    assert _snapshot(outside) == before, "a link's target or the folder outside changed"
    assert sorted(p.name for p in root.iterdir()) == ["outside", "work"]
    after = _snapshot(root / "work")
    if rc != 0:
        assert after == mine, "a refused run changed the folder"
    elif not force:
        # Without --force only what was not there before is written: nothing planted changed.
        assert all(after.get(name) == value for name, value in mine.items()), (mine, after)
    _no_leftovers(root / "work", {n for n in mine if Path(n).name.startswith(".")})
