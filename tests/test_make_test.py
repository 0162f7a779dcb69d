"""The one test command: CI runs exactly `make test`, which runs the suite in parallel and prints line coverage."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_ci_runs_exactly_make_test():
    lines = [l.strip() for l in (ROOT / ".ci" / "run").read_text().splitlines() if l.strip() and not l.startswith("#")]
    assert lines[-1] == "make test"


def test_make_test_runs_in_parallel_with_line_coverage():
    out = subprocess.run(["make", "-n", "test"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    (pytest,) = [shlex.split(l) for l in out.splitlines() if l.split(" ", 1)[0].endswith("/pytest")]
    assert pytest[1:] == ["-n", "auto", "--cov=pdrepro", "--cov-report=term"]
