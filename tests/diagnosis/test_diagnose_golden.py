"""Golden diagnoses: every run recorded on the H200 that `pdrepro diagnose` reads, diagnosed again and held
against tests/golden/diagnose/<folder>.json (the folder's path under tests/recorded/, "/" written "--"), byte for
byte. A change in a cause, a share or a line of evidence shows as a diff to review.

After an intended change, review the diff and regenerate with
    PDREPRO_UPDATE_GOLDEN=1 .venv/bin/pytest -p no:xdist tests/diagnosis/test_diagnose_golden.py
Paths of this machine never enter a golden: the recorded folder is written as tests/recorded."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from diagnosisrun import diagnose_json
from test_diagnose_recorded import EVERY, RECORDED

UPDATE = os.environ.get("PDREPRO_UPDATE_GOLDEN") == "1"
GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "diagnose"
# The A/B's and the one-box pair's own arms, diagnosed alone as a user would diagnose one arm.
FOLDERS = sorted({*EVERY, "h200-onebox-nixl-and-mooncake-sglang-0.5.15.post1/mooncake-tcp"})


def golden_name(folder: str) -> str:
    return folder.replace("/", "--") + ".json"


def produced(folder: str) -> str:
    # Diagnosed in place: diagnose_json proves nothing in the recorded run is written.
    d = diagnose_json(RECORDED / folder)
    text = json.dumps(d.model_dump(mode="json"), indent=2, sort_keys=True) + "\n"
    return text.replace(str(RECORDED), "tests/recorded")


@pytest.mark.parametrize("folder", FOLDERS)
def test_diagnosis_matches_golden(folder):
    text = produced(folder)
    # No path of this machine: neither the checkout's nor a temporary folder's.
    assert str(RECORDED.parents[1]) not in text and "/tmp/" not in text
    golden = GOLDEN / golden_name(folder)
    if UPDATE:
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(text)
    assert golden.is_file(), f"no golden {golden}; rerun with PDREPRO_UPDATE_GOLDEN=1 and review it"
    assert text == golden.read_text(), f"{golden.name} changed; review the diff, then rerun with PDREPRO_UPDATE_GOLDEN=1"


def test_no_orphaned_goldens():
    # A golden whose recorded run is no longer diagnosed here would sit there unchecked.
    found = {p.name for p in GOLDEN.glob("*.json")}
    assert found, "no goldens found"
    assert found == {golden_name(f) for f in FOLDERS}
