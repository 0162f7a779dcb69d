"""`pdrepro repro --gates DIR` names a gate suite that is not there on one line with exit 2, before any stage
runs (pytest given a missing path ended the pipeline with its own usage error about --run-dir, exit 4, after
the sweep had run)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _repro(tmp_path: Path, gates: str) -> subprocess.CompletedProcess:
    # A router nobody answers: a stage that ran would wait on it; the check must come first.
    return subprocess.run([sys.executable, "-m", "pdrepro", "repro", "--router", "http://127.0.0.1:9",
                           "--out", str(tmp_path / "run"), "--gates", gates, "--pytest", f"{sys.executable} -m pytest",
                           "--model-path", str(tmp_path), "--dataset-path", str(tmp_path / "d.json"),
                           "--sweep-args=--wait-timeout 1"],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)


@pytest.mark.parametrize("gates, says", [("/nonexistent", "no such folder"),
                                         (".", "holds no conftest.py"),
                                         ("repro", "no such folder")])  # relative: from where repro runs
def test_a_gate_suite_that_is_not_there_is_one_line_and_exit_2(tmp_path, gates, says):
    proc = _repro(tmp_path, gates)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and f"--gates {gates}: {says}" in lines[0] and "repro/" in lines[0], proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr and "== 2/4 sweep" not in proc.stdout
    assert not (tmp_path / "run").exists()  # nothing ran


def test_the_bundles_gate_suite_is_taken(tmp_path):
    # The suite itself passes the check: the pipeline goes on to its sweep (which finds no router: not exit 2
    # for --gates).
    proc = _repro(tmp_path, str(REPO / "repro"))
    assert "--gates" not in proc.stderr and "== 2/4 sweep" in proc.stdout, proc.stdout + proc.stderr
