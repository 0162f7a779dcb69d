"""Golden launch snapshots: every shipped scenario rendered for every target
it applies to, byte for byte, under tests/golden/render/<scenario>/<target>/.

After an intended change, review the diff and regenerate with
    PDREPRO_UPDATE_GOLDEN=1 .venv/bin/pytest -p no:xdist tests/launch/test_render_golden.py
which rewrites each snapshot folder whole (stale files go)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from render_targets import GOLDEN_ROOT, TARGETS, cases, render_argv

from pdrepro.cli import main

UPDATE = os.environ.get("PDREPRO_UPDATE_GOLDEN") == "1"


def _produced(out: Path) -> dict[str, str]:
    return {str(p.relative_to(out)): p.read_text().replace(str(out), "<OUT>")
            for p in sorted(out.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("name,target", cases())
def test_launch_matches_golden(name, target, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(render_argv(name, target, out)) == 0
    printed = capsys.readouterr().out.replace(str(out), "<OUT>")
    produced = _produced(out)
    assert produced, "render wrote nothing"
    if target == "compose":
        assert produced["commands.txt"] in printed
    golden = GOLDEN_ROOT / name / target
    if UPDATE:
        shutil.rmtree(golden, ignore_errors=True)
        for rel, text in produced.items():
            (golden / rel).parent.mkdir(parents=True, exist_ok=True)
            (golden / rel).write_text(text)
    assert golden.is_dir(), f"no snapshot {golden}; rerun with PDREPRO_UPDATE_GOLDEN=1 and review it"
    expected = {str(p.relative_to(golden)): p.read_text() for p in sorted(golden.rglob("*")) if p.is_file()}
    assert sorted(produced) == sorted(expected), "files differ from the snapshot; rerun with PDREPRO_UPDATE_GOLDEN=1"
    for rel in produced:
        assert produced[rel] == expected[rel], f"{rel} changed; review the diff, then rerun with PDREPRO_UPDATE_GOLDEN=1"


def test_no_orphaned_snapshots():
    # A snapshot folder whose scenario or target is gone (or no longer applies)
    # would otherwise sit there unchecked.
    known = set(cases())
    found = {(p.parent.name, p.name) for p in GOLDEN_ROOT.glob("*/*") if p.is_dir()}
    strays = [p for p in GOLDEN_ROOT.glob("*") if p.is_file()] + [p for p in GOLDEN_ROOT.glob("*/*") if p.is_file()]
    assert not strays, f"files outside a <scenario>/<target>/ folder: {strays}"
    assert found, "no snapshots found"
    orphans = sorted(found - known)
    assert not orphans, f"snapshots with no shipped scenario/target: {orphans}; delete them"


def test_every_target_has_snapshots():
    # Each target renders at least one shipped scenario; a target entry that
    # renders nothing would make the snapshot check vacuous for it.
    for target in TARGETS:
        assert cases([target]), target
