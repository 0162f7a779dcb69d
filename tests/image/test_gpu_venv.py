"""`make gpu-venv` (scripts/gpu-venv.sh) with a fixture lock for this machine's Python 3.11: hashes
enforced, offline from a wheelhouse, the subset that leaves packages out, pip check, the imports.
The real lock is for Python 3.12, which this machine lacks; it is run on the GPU machine."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LOCK = REPO / "tests" / "fixtures" / "gpu-venv" / "fixture.lock"
PY = f"{sys.version_info[0]}.{sys.version_info[1]}"


def _base_python() -> str:
    # A real interpreter, not this venv's: the one a site would name with PYTHON312=.
    exe = shutil.which(f"python{PY}", path="/usr/local/bin:/usr/bin:/bin")
    if exe is None:
        pytest.skip(f"no system python{PY}")
    return exe


@pytest.fixture(scope="module")
def wheelhouse(tmp_path_factory) -> Path:
    """The fixture lock's wheels, fetched from PyPI once with their hashes checked (WHEELHOUSE/gpu)."""
    root = tmp_path_factory.mktemp("wheelhouse")
    proc = subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
                           "--require-hashes", "--no-deps", "--only-binary=:all:", "-d", str(root / "gpu"), "-r", str(LOCK)],
                          capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        pytest.skip(f"PyPI not reachable for the fixture wheels: {proc.stderr.strip().splitlines()[-1:]}")
    return root


def _make(tmp_path, wheelhouse, *extra, lock=LOCK) -> subprocess.CompletedProcess:
    args = ["make", "--no-print-directory", "-o", "setup", "gpu-venv", f"PYTHON312={_base_python()}", f"LOCK_PYTHON={PY}",
            f"LOCK={lock}", f"GPU_VENV={tmp_path / 'venv'}", f"WHEELHOUSE={wheelhouse}", "SGLANG=none", "MOONCAKE=none",
            "BUNDLE=none", "IMPORTS=dateutil six", *extra]
    env = {**os.environ, "MAKEFLAGS": ""}
    env.pop("PYTHONPATH", None)
    return subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=600, env=env)


def test_the_lock_installs_offline_with_hashes_and_the_imports_pass(tmp_path, wheelhouse):
    proc = _make(tmp_path, wheelhouse)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"offline: wheels from {wheelhouse}/gpu only" in proc.stdout
    assert "installing 2 locked packages (hashes required)" in proc.stdout
    assert "pip check: No broken requirements found." in proc.stdout
    assert "import dateutil: ok" in proc.stdout and "import six: ok" in proc.stdout
    python = tmp_path / "venv" / "bin" / "python"
    out = subprocess.run([str(python), "-c", "import dateutil, six; print(dateutil.__version__, six.__version__)"],
                         capture_output=True, text=True)
    assert out.stdout.split() == ["2.9.0.post0", "1.16.0"]
    assert "include-system-site-packages = false" in (tmp_path / "venv" / "pyvenv.cfg").read_text()


def test_a_wrong_hash_stops_the_build(tmp_path, wheelhouse):
    bad = tmp_path / "bad.lock"
    bad.write_text(LOCK.read_text().replace("8abb2f1d", "0bb2f1d8"))
    proc = _make(tmp_path, wheelhouse, lock=bad)
    assert proc.returncode != 0
    assert "THESE PACKAGES DO NOT MATCH THE HASHES" in proc.stderr
    assert "gpu-venv: installing" in proc.stderr and "a hash that does not match" in proc.stderr
    assert "import" not in proc.stdout.split("installing 2 locked packages")[1]


def test_a_module_that_does_not_import_is_named(tmp_path, wheelhouse):
    proc = _make(tmp_path, wheelhouse, "IMPORTS=dateutil sglang_router")
    assert proc.returncode != 0
    assert "gpu-venv: import sglang_router failed" in proc.stderr and "No module named 'sglang_router'" in proc.stderr


def test_the_serving_subset_leaves_packages_out_and_pip_check_says_so(tmp_path, wheelhouse):
    exclude = tmp_path / "exclude.txt"
    exclude.write_text("# fixture\nsix   # dateutil declares it\n")
    proc = _make(tmp_path, wheelhouse, "SERVING_ONLY=1", f"GPU_SERVING_EXCLUDE={exclude}", "IMPORTS=dateutil.tz")
    # dateutil.tz imports six: left out, it is missing, and the import step says so.
    assert proc.returncode != 0
    assert "left out of the lock: six" in proc.stdout and "installing 1 locked packages" in proc.stdout
    assert "only what was left out on purpose or the system" in proc.stdout and "requires six" in proc.stdout
    assert "gpu-venv: import dateutil.tz failed" in proc.stderr
    ok = _make(tmp_path, wheelhouse, "SERVING_ONLY=1", f"GPU_SERVING_EXCLUDE={exclude}", "IMPORTS=dateutil")
    assert ok.returncode == 0, ok.stdout + ok.stderr


def test_a_venv_that_sees_the_systems_packages(tmp_path, wheelhouse):
    # For a machine whose own torch should serve; the system's packages' own pip-check problems are not ours.
    proc = _make(tmp_path, wheelhouse, "VENV_SYSTEM_SITE=1")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "seeing the system site-packages" in proc.stdout
    assert "include-system-site-packages = true" in (tmp_path / "venv" / "pyvenv.cfg").read_text()


def test_a_python_other_than_the_locks_is_refused(tmp_path, wheelhouse):
    proc = _make(tmp_path, wheelhouse, "LOCK_PYTHON=3.12")
    assert proc.returncode != 0
    assert f"is Python {PY}, but {LOCK} is resolved for 3.12" in proc.stderr
    assert not (tmp_path / "venv").exists()


def test_the_serving_exclusions_are_packages_of_the_gpu_lock():
    lock = (REPO / "docker" / "gpu-requirements.lock").read_text()
    names = {line.split("==")[0].lower() for line in lock.splitlines() if line[:1].isalnum()}
    listed = [line.split("#")[0].strip() for line in (REPO / "docker" / "gpu-serving-exclude.txt").read_text().splitlines()]
    listed = [n for n in listed if n]
    assert listed and not set(listed) - names, set(listed) - names
