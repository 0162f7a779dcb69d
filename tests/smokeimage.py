"""The real Docker engine and the real smoke image, for tests that need them.

A missing engine fails under CI (.ci/run installs and starts one) and skips
elsewhere. The image is built through `make smoke-image`, which reuses an
existing image whose context-hash label matches, so repeated calls are cheap.
"""

from __future__ import annotations

import os
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

import pytest

from pdrepro.core.pins import parse_env_file

REPO = Path(__file__).resolve().parents[1]
SMOKE_IMAGE = parse_env_file(REPO / "docker" / "versions.env")["SMOKE_IMAGE"]


@lru_cache(maxsize=1)
def _engine_problem() -> str | None:
    try:
        proc = subprocess.run(["docker", "info", "--format", "{{.ServerVersion}}"],
                              capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"docker CLI unusable: {type(exc).__name__}"
    if proc.returncode != 0:
        return "no Docker engine answers `docker info`; run .ci/docker-engine.sh"
    return None


def require_docker() -> None:
    problem = _engine_problem()
    if problem:
        if os.environ.get("CI") == "true":
            pytest.fail(problem)
        pytest.skip(problem)


@lru_cache(maxsize=1)
def _build() -> str:
    # This interpreter's pip fills the wheelhouse (the venv under `make test`).
    proc = subprocess.run(["make", "--no-print-directory", "smoke-image", f"PYTHON={sys.executable}"],
                          cwd=REPO, capture_output=True, text=True, timeout=1500)
    if proc.returncode != 0:
        pytest.fail(f"make smoke-image failed (exit {proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc.stdout + proc.stderr


def smoke_image() -> str:
    """Name of the built smoke image (built now if missing or stale)."""
    require_docker()
    _build()
    return SMOKE_IMAGE


def run_in_image(image: str, script: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(["docker", "run", "--rm", "--network", "none", image, "bash", "-c", script],
                          capture_output=True, text=True, timeout=timeout)
