"""The tree passes the linter configured in pyproject.toml, at the pinned version."""

import subprocess
import sys
from pathlib import Path

import tomllib

from pdrepro.pins import load_pins

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_finds_nothing():
    proc = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "src", "tests", "repro"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"ruff check (fix with `ruff check --fix`, then by hand):\n{proc.stdout}{proc.stderr}"


def test_ruff_version_agrees_with_the_pin():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    ruff = [r for r in project["project"]["optional-dependencies"]["test"] if r.startswith("ruff")]
    assert ruff == [f"ruff=={load_pins()['RUFF_VERSION']}"]
    proc = subprocess.run([sys.executable, "-m", "ruff", "--version"], capture_output=True, text=True, timeout=60)
    assert proc.stdout.split() == ["ruff", load_pins()["RUFF_VERSION"]], proc.stdout + proc.stderr
