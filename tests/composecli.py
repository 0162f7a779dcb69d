"""Runs the real compose v2 CLI for the tests: `docker compose` or the
standalone `docker-compose`, whichever this machine has."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from functools import lru_cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@lru_cache(maxsize=1)
def _detect() -> tuple[str, ...] | None:
    candidates = []
    if shutil.which("docker"):
        candidates.append(("docker", "compose"))
    if shutil.which("docker-compose"):
        candidates.append(("docker-compose",))
    for cmd in candidates:
        try:
            out = subprocess.run([*cmd, "version", "--short"], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if out.returncode == 0 and out.stdout.strip().lstrip("v").startswith("2"):
            return cmd
    return None


def compose_cmd() -> tuple[str, ...]:
    """The compose v2 command; a missing one fails under CI (which installs it)
    and skips elsewhere."""
    cmd = _detect()
    if cmd is None:
        message = "compose v2 not found (neither `docker compose` nor `docker-compose`); run .ci/docker-engine.sh"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return cmd


def run_config(compose_file: str | Path | list, env_file: str | Path,
               extra_env: dict | None = None) -> subprocess.CompletedProcess:
    """`compose config` of one compose file, or of a list of them (each later one an override)."""
    # A bare environment: shell variables would override the env file's values.
    env = {k: os.environ[k] for k in ("PATH", "HOME") if k in os.environ}
    env.update(extra_env or {})
    files = compose_file if isinstance(compose_file, list) else [compose_file]
    return subprocess.run(
        [*compose_cmd(), *(a for f in files for a in ("-f", str(f))), "--env-file", str(env_file),
         "config", "--format", "json"],
        capture_output=True, text=True, cwd=REPO, env=env, timeout=60,
    )


def config(compose_file: str | Path | list, env_file: str | Path, extra_env: dict | None = None) -> dict:
    out = run_config(compose_file, env_file, extra_env)
    assert out.returncode == 0, f"compose config failed: {out.stderr}"
    return json.loads(out.stdout)
