"""The one test command: CI runs exactly `make test`, which runs the suite in parallel, shows a count of finished
tests with the time so far, lists the ten slowest tests and prints line coverage."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_ci_runs_exactly_make_test():
    lines = [l.strip() for l in (ROOT / ".ci" / "run").read_text().splitlines() if l.strip() and not l.startswith("#")]
    assert lines[-1] == "make test"


def _make_test_argv() -> list[str]:
    out = subprocess.run(["make", "-n", "test"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    (pytest,) = [shlex.split(l) for l in out.splitlines() if l.split(" ", 1)[0].endswith("/pytest")]
    return pytest


def test_make_test_runs_in_parallel_with_progress_durations_and_line_coverage():
    workers = max(4, os.cpu_count() or 4)  # at least 4: the suite waits on containers and processes (Makefile)
    assert _make_test_argv()[1:] == ["-n", str(workers), "-o", "console_output_style=count", "--durations=10",
                                     "--cov=pdrepro", "--cov-report=term"]


def test_make_tests_output_counts_with_elapsed_time_and_names_the_slowest(tmp_path):
    # make test's own options on a small suite of its own: what a user sees, progress line and slowest list.
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "conftest.py").write_text(f"import sys\nsys.path.insert(0, {str(ROOT / 'tests')!r})\n"
                                       "pytest_plugins = ['elapsed']\n")
    (suite / "test_some.py").write_text("import time\nimport pytest\n\n\n@pytest.mark.parametrize('n', range(12))\n"
                                        "def test_n(n):\n    time.sleep(0.01 * n)\n")
    argv = [a for a in _make_test_argv()[1:] if not a.startswith("--cov")]
    argv[argv.index("-n") + 1] = "2"  # two workers: the parallel path, without taking every core of the machine
    proc = subprocess.run([sys.executable, "-m", "pytest", *argv, "-p", "no:cacheprovider", str(suite)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"\[12/12, \d+m\d\ds\]", proc.stdout), proc.stdout
    assert "slowest 10 durations" in proc.stdout
    assert "test_some.py::test_n[11]" in proc.stdout  # the slowest test is listed by name
