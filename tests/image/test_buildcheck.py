"""`make build` checks its inputs first and stops with one line naming what is
wrong, before anything is downloaded or built."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pdrepro.core.pins import parse_env_file
from pdrepro.image import gpulock

ROOT = Path(__file__).resolve().parents[2]
PINS = parse_env_file(ROOT / "docker" / "versions.env")
BASE = f"{PINS['CUDA_BASE_IMAGE']}@{PINS['CUDA_BASE_DIGEST']}"
FILES = ("versions.env", "gpu-requirements.in", "gpu-requirements.lock",
         "mooncake-build-tools.in", "mooncake-build-tools.lock")


@pytest.fixture
def root(tmp_path) -> Path:
    """A copy of the checkout's build inputs that a test may break."""
    (tmp_path / "docker").mkdir()
    for name in FILES:
        shutil.copy(ROOT / "docker" / name, tmp_path / "docker" / name)
    return tmp_path


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def _run(root: Path, *args: str) -> tuple[int, str, str]:
    proc = subprocess.run([sys.executable, "-m", "pdrepro.image.build_inputs", "--root", str(root), *args],
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    return proc.returncode, proc.stdout, proc.stderr


def _one_line_error(code: int, err: str) -> str:
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("make build: ") and "Traceback" not in err
    return lines[0]


def test_the_checkouts_inputs_pass(root):
    code, out, err = _run(root, "--base", BASE, "--no-remote")
    assert (code, err) == (0, "") and "inputs ok" in out


def test_a_short_base_digest_is_named(root):
    _edit(root / "docker/versions.env", f"CUDA_BASE_DIGEST={PINS['CUDA_BASE_DIGEST']}", "CUDA_BASE_DIGEST=sha256:8b2705ea")
    line = _one_line_error(*_run(root, "--no-remote")[::2])
    assert "CUDA_BASE_DIGEST='sha256:8b2705ea'" in line and "full digest" in line


def test_a_base_given_by_tag_only_is_named(root):
    line = _one_line_error(*_run(root, "--base", PINS["CUDA_BASE_IMAGE"], "--no-remote")[::2])
    assert f"GPU_BASE='{PINS['CUDA_BASE_IMAGE']}'" in line


def test_a_missing_lock_is_named(root):
    (root / "docker/gpu-requirements.lock").unlink()
    line = _one_line_error(*_run(root, "--base", BASE, "--no-remote")[::2])
    assert line.endswith("gpu-requirements.lock is missing; run `make lock`")


def test_a_router_pin_the_lock_does_not_hold_is_named(root):
    _edit(root / "docker/versions.env", f"SGLANG_ROUTER_VERSION={PINS['SGLANG_ROUTER_VERSION']}",
          "SGLANG_ROUTER_VERSION=0.3.3")
    line = _one_line_error(*_run(root, "--base", BASE, "--no-remote")[::2])
    assert f"sglang-router {PINS['SGLANG_ROUTER_VERSION']}" in line and "SGLANG_ROUTER_VERSION=0.3.3" in line


def test_a_declared_pin_the_lock_does_not_follow_is_named(root):
    _edit(root / "docker/gpu-requirements.in", "\nsglang-kernel==0.4.4\n", "\nsglang-kernel==0.4.5\n")
    line = _one_line_error(*_run(root, "--base", BASE, "--no-remote")[::2])
    assert "sglang-kernel==0.4.4 is locked but sglang-kernel==0.4.5 is declared" in line


def test_a_cuda_major_change_without_relocking_is_named(root):
    _edit(root / "docker/versions.env", f"CUDA_VERSION={PINS['CUDA_VERSION']}", "CUDA_VERSION=12.9.1")
    line = _one_line_error(*_run(root, "--base", BASE, "--no-remote")[::2])
    assert "CUDA_VERSION=12.9.1" in line and "nvidia-cudnn-cu13" in line


def test_tools_lock_drifting_from_the_main_lock_is_named(root):
    tools = root / "docker/mooncake-build-tools.lock"
    locked = gpulock.parse_lock(tools.read_text())["auditwheel"].version
    _edit(tools, f"auditwheel=={locked}", "auditwheel==6.0.0")
    line = _one_line_error(*_run(root, "--base", BASE, "--no-remote")[::2])
    assert f"auditwheel==6.0.0 but docker/gpu-requirements.lock has {locked}" in line


def _git(*args: str, cwd: Path | None = None) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True, env=env).stdout.strip()


def _repo(path: Path) -> str:
    path.mkdir(parents=True)
    _git("init", "-q", str(path))
    (path / "README").write_text("x\n")
    _git("add", "README", cwd=path)
    _git("commit", "-q", "-m", "x", cwd=path)
    return _git("rev-parse", "HEAD", cwd=path)


def test_a_local_source_at_another_commit_is_named(root, tmp_path):
    head = _repo(tmp_path / "mooncake")
    line = _one_line_error(*_run(root, "--base", BASE, "--no-remote", "--source", f"mooncake={tmp_path / 'mooncake'}")[::2])
    assert f"is at {head}, not MOONCAKE_COMMIT={PINS['MOONCAKE_COMMIT']}" in line


@pytest.mark.parametrize("make", ["absent", "empty"])
def test_a_missing_or_empty_local_source_is_named(root, tmp_path, make):
    src = tmp_path / "sglang-src"
    if make == "empty":
        src.mkdir()
    line = _one_line_error(*_run(root, "--base", BASE, "--no-remote", "--source", f"sglang={src}")[::2])
    assert str(src) in line and PINS["SGLANG_COMMIT"] in line


def test_an_exported_source_tree_without_git_is_taken(root, tmp_path):
    src = tmp_path / "sglang-export"
    (src / "python").mkdir(parents=True)
    code, out, err = _run(root, "--base", BASE, "--no-remote", "--source", f"sglang={src}")
    assert code == 0, err


@pytest.mark.parametrize("stamped", ["pin", "other"])
def test_an_assembled_tree_is_judged_by_its_stamp(root, tmp_path, stamped):
    src = tmp_path / "mooncake-src"
    src.mkdir()
    commit = PINS["MOONCAKE_COMMIT"] if stamped == "pin" else "f" * 40
    (src / ".pdrepro-source").write_text(f"mooncake={commit}\nextern/pybind11={'a' * 40}\n")
    code, out, err = _run(root, "--base", BASE, "--no-remote", "--source", f"mooncake={src}")
    if stamped == "pin":
        assert code == 0, err
    else:
        line = _one_line_error(code, err)
        assert "another commit" in line and "MOONCAKE_GIT=" in line


def test_repositories_are_asked_through_the_mirror(root, tmp_path):
    mirror = tmp_path / "mirror"
    for url in (PINS["MOONCAKE_REPO"], PINS["SGLANG_REPO"]):
        _repo(mirror / url.removeprefix("https://github.com/"))
    code, out, err = _run(root, "--base", BASE, "--mirror", str(mirror))
    assert code == 0, err
    shutil.rmtree(mirror / PINS["SGLANG_REPO"].removeprefix("https://github.com/"))
    line = _one_line_error(*_run(root, "--base", BASE, "--mirror", str(mirror))[::2])
    assert line.startswith("make build: sglang source ") and "cannot be reached" in line
    assert "GITHUB_MIRROR" in line


def test_an_air_gapped_build_needs_every_locked_wheel(root, tmp_path):
    wheelhouse = tmp_path / "wheelhouse"
    wheelhouse.mkdir()
    locked = gpulock.parse_lock((root / "docker/gpu-requirements.lock").read_text())
    line = _one_line_error(*_run(root, "--base", BASE, "--no-remote", "--wheelhouse", str(wheelhouse))[::2])
    assert f"lacks {len(locked)} of the {len(locked)} locked wheels" in line and "make gpu-wheelhouse" in line
    for p in locked.values():
        (wheelhouse / f"{p.name.replace('-', '_')}-{p.version}-py3-none-any.whl").touch()
    code, out, err = _run(root, "--base", BASE, "--no-remote", "--wheelhouse", str(wheelhouse))
    assert code == 0, err
    (wheelhouse / f"torch-{locked['torch'].version}-py3-none-any.whl").unlink()
    line = _one_line_error(*_run(root, "--base", BASE, "--no-remote", "--wheelhouse", str(wheelhouse))[::2])
    assert f"lacks 1 of the {len(locked)} locked wheels (torch=={locked['torch'].version})" in line


def test_make_build_stops_before_docker(tmp_path):
    # A docker on PATH that leaves a mark: it must never be reached.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    mark = tmp_path / "docker-ran"
    (bin_dir / "docker").write_text(f"#!/bin/sh\ntouch {mark}\n")
    (bin_dir / "docker").chmod(0o755)
    proc = subprocess.run(["make", "--no-print-directory", "build", "CUDA_BASE_DIGEST=sha256:8b2705ea"],
                          cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"})
    assert proc.returncode != 0 and not mark.exists()
    ours = [l for l in proc.stderr.splitlines() if l.startswith("make build: ")]
    assert len(ours) == 1 and "GPU_BASE=" in ours[0] and "sha256:8b2705ea'" in ours[0]
    assert "pip wheel" not in proc.stdout
