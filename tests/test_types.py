"""The type checker is clean on the package: mypy, with the configuration in pyproject.toml ([tool.mypy])."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MYPY = Path(sys.executable).with_name("mypy")


def test_mypy_is_clean_on_the_package(tmp_path):
    # The checkout's own sources, whatever the environment has installed; the cache stays out of the tree.
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    result = subprocess.run([str(MYPY), "--config-file", str(ROOT / "pyproject.toml"), "--cache-dir", str(tmp_path)],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    output = result.stdout[-6000:] + result.stderr[-2000:]
    assert result.returncode == 0, f"mypy found type errors (run `.venv/bin/mypy`):\n{output}"
    assert "Success: no issues found" in result.stdout
