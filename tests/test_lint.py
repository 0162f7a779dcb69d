"""The tree passes the linter configured in pyproject.toml, at the pinned version."""

import subprocess
import sys
from pathlib import Path

from pdrepro.pins import load_pins

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_finds_nothing():
    proc = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "src", "tests", "repro"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"ruff check (fix with `ruff check --fix`, then by hand):\n{proc.stdout}{proc.stderr}"


def test_the_ruff_that_runs_is_the_pinned_one():
    # pyproject's ruff==... against versions.env is checked with the other test-extra pins in test_pins.py.
    proc = subprocess.run([sys.executable, "-m", "ruff", "--version"], capture_output=True, text=True, timeout=60)
    assert proc.stdout.split() == ["ruff", load_pins()["RUFF_VERSION"]], proc.stdout + proc.stderr
