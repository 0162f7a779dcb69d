"""NIXL in the GPU image: docker/gpu-requirements.lock holds the meta package and the CUDA 13 backend wheel at
NIXL_VERSION, hashed; `make lock` keeps the CUDA 12 backend out; the image's pip check allows that one gap
and nothing else (docker/pip-check.sh run as the image runs it, with a stand-in pip on PATH); `pdrepro
versions` names NIXL's version from the backend wheel."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from pdrepro.core.pins import parse_env_file
from pdrepro.image import gpulock
from pdrepro.image import versions as vr

ROOT = Path(__file__).resolve().parents[2]
DOCKER = ROOT / "docker"
PINS = parse_env_file(DOCKER / "versions.env")
LOCK = gpulock.parse_lock((DOCKER / "gpu-requirements.lock").read_text())
DECLARED = {d.name: d for d in gpulock.read_requirements_in(DOCKER / "gpu-requirements.in")}
# What `pip download --no-deps nixl-cu13==1.5.1 nixl==1.5.1` (cp312, manylinux_2_28) fetched from PyPI: the
# wheels the image installs. `make lock` (uv) lists the hash of every wheel of a version, so the backend's
# entry holds one per Python and architecture; --require-hashes then takes the one that matches.
PYPI_SHA256 = {"nixl": "aa90914d7df16fb586e57be633972917c6c2489b004ad241913ecda02207eaab",
               "nixl-cu13": "ce48b601bad4c4503a5d9d418e6f4b1289a3a68e407af99f0f7e377f8371f49b"}


def test_the_pin_the_resolver_input_and_the_lock_agree():
    assert PINS["NIXL_VERSION"] == "1.5.1"
    for name in ("nixl", "nixl-cu13"):
        assert DECLARED[name].exact == PINS["NIXL_VERSION"]
        assert LOCK[name].version == PINS["NIXL_VERSION"]
        assert PYPI_SHA256[name] in LOCK[name].hashes
    assert "nixl-cu12" not in LOCK  # another CUDA major than the image's
    assert gpulock.nixl_problems(LOCK, PINS) == []
    # The backend wheel's own requirements (torch, numpy) are in the lock: --no-deps adds nothing.
    assert {"torch", "numpy"} <= set(LOCK)


@pytest.mark.parametrize("change, named", [
    ({"nixl": None}, "has nixl missing"),
    ({"nixl-cu13": "1.5.2"}, "has nixl-cu13 1.5.2 but NIXL_VERSION=1.5.1"),
])
def test_a_lock_that_disagrees_with_the_pin_is_named(change, named):
    packages = dict(LOCK)
    for name, version in change.items():
        if version is None:
            del packages[name]
        else:
            packages[name] = gpulock.Locked(name, version, LOCK[name].hashes)
    problems = gpulock.nixl_problems(packages, PINS, "docker/gpu-requirements.lock")
    assert len(problems) == 1 and named in problems[0] and "make lock" in problems[0]


def test_make_lock_overrides_the_other_cuda_backend_away_and_takes_nixl_past_the_lock_date():
    mk = (DOCKER / "lock.mk").read_text()
    assert "--override $(GPU_OVERRIDES)" in mk and "--exclude-newer-package nixl-cu13=" in mk
    overrides = [l for l in (DOCKER / "gpu-overrides.txt").read_text().splitlines() if l and not l.startswith("#")]
    assert overrides == ['nixl-cu12; sys_platform == "never"']
    newer = re.search(r"^GPU_LOCK_NIXL_NEWER := (\S+)$", mk, re.M)
    assert newer and newer[1] > PINS["GPU_LOCK_EXCLUDE_NEWER"]


def test_every_pip_check_of_the_image_allows_only_the_nixl_gap():
    dockerfile = (DOCKER / "gpu.Dockerfile").read_text()
    assert "COPY docker/pip-check.sh /usr/local/bin/pip-check" in dockerfile
    assert not re.search(r"&& pip check\b", dockerfile) and dockerfile.count("&& pip-check") == 3


def _pip_check(tmp_path: Path, report: str, rc: int) -> subprocess.CompletedProcess:
    fake = tmp_path / "bin"
    fake.mkdir(exist_ok=True)
    (fake / "pip").write_text(f"#!/bin/sh\ncat <<'END'\n{report}\nEND\nexit {rc}\n")
    (fake / "pip").chmod(0o755)
    env = {**os.environ, "PATH": f"{fake}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run(["bash", str(DOCKER / "pip-check.sh")], capture_output=True, text=True, env=env, timeout=30)


@pytest.mark.parametrize("report, rc, ok", [
    ("No broken requirements found.", 0, True),
    ("nixl 1.5.1 requires nixl-cu12, which is not installed.", 1, True),
    ("nixl 1.5.1 requires nixl-cu12, which is not installed.\nsglang 0.5 requires torch, which is not installed.", 1, False),
    ("other 1.0 requires nixl-cu12, which is not installed.", 1, False),
    ("nixl 1.5.1 has requirement nixl-cu13==1.5.1, but you have nixl-cu13 1.5.2.", 1, False),
])
def test_the_image_pip_check(tmp_path, report, rc, ok):
    proc = _pip_check(tmp_path, report, rc)
    assert (proc.returncode == 0) is ok, proc.stdout + proc.stderr
    if not ok:
        assert proc.stderr.startswith("pip check: ") and "nixl-cu12, which" not in proc.stderr.split("\n")[0] \
            or "other 1.0" in proc.stderr


def test_versions_names_nixl_from_the_backend_wheel_first():
    assert vr.PACKAGES["nixl"][0] == "nixl-cu13" and "nixl" in vr.PACKAGES["nixl"]
    assert "NIXL_VERSION" in vr.PIN_KEYS
    assert vr.collect_versions()["pins"]["nixl_version"] == PINS["NIXL_VERSION"]


def test_the_image_and_gpu_venv_import_nixl_after_installing():
    # Under the libcuda stub, next to the Mooncake engine's check (torch in the image names CUDA 13 to the meta
    # package, which then imports nixl_cu13).
    assert 'python -c "from mooncake.engine import TransferEngine; import nixl"' in (DOCKER / "gpu.Dockerfile").read_text()
    imports = re.search(r"^IMPORTS \?= (.*)$", (DOCKER / "lock.mk").read_text(), re.M)
    assert imports and "nixl" in imports[1].split()
