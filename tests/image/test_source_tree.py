"""docker/source-tree.sh: a source tree at one commit, submodules at the
commits that commit records, as plain files for an air-gapped GPU build."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "docker" / "source-tree.sh"


def _git(cwd: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.org", "PATH": "/usr/bin:/bin", "HOME": str(cwd)}
    return subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True, text=True,
                          env=env).stdout.strip()


@pytest.fixture
def repos(tmp_path):
    """A 'Mooncake' repo whose commit records a submodule at a commit of another repo."""
    sub = tmp_path / "pybind11"
    sub.mkdir()
    _git(sub, "init", "-q")
    (sub / "pybind.h").write_text("old\n")
    _git(sub, "add", ".")
    _git(sub, "commit", "-qm", "one")
    pinned = _git(sub, "rev-parse", "HEAD")
    (sub / "pybind.h").write_text("newer, not the recorded one\n")
    _git(sub, "commit", "-qam", "two")
    main = tmp_path / "mooncake"
    main.mkdir()
    _git(main, "init", "-q")
    (main / "CMakeLists.txt").write_text("project(m)\n")
    _git(main, "add", ".")
    _git(main, "update-index", "--add", "--cacheinfo", f"160000,{pinned},extern/pybind11")
    _git(main, "commit", "-qm", "pin")
    return main, _git(main, "rev-parse", "HEAD"), sub, pinned


def _run(*args) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(SCRIPT), *map(str, args)], capture_output=True, text=True)


def test_the_tree_holds_the_recorded_submodule_commit(repos, tmp_path):
    main, commit, sub, pinned = repos
    out = tmp_path / "src"
    proc = _run("mooncake", main, commit, out, f"extern/pybind11={sub}")
    assert proc.returncode == 0, proc.stderr
    assert (out / "CMakeLists.txt").read_text() == "project(m)\n"
    assert (out / "extern/pybind11/pybind.h").read_text() == "old\n"
    stamp = (out / ".pdrepro-source").read_text().split()
    assert stamp == [f"mooncake={commit}", f"extern/pybind11={pinned}"]


def test_a_missing_submodule_says_how_to_provide_it(repos, tmp_path):
    main, commit, _, _ = repos
    proc = _run("mooncake", main, commit, tmp_path / "src")
    assert proc.returncode == 2
    assert "extern/pybind11" in proc.stderr and "=GIT_DIR" in proc.stderr
    assert not (tmp_path / "src").exists()


def test_a_commit_the_clone_lacks_is_named(repos, tmp_path):
    main, _, sub, _ = repos
    proc = _run("mooncake", main, "0" * 40, tmp_path / "src", f"extern/pybind11={sub}")
    assert proc.returncode == 2 and "does not hold commit" in proc.stderr


def test_the_local_source_stage_checks_the_stamp():
    gpu = (ROOT / "docker" / "gpu.Dockerfile").read_text()
    local = gpu[gpu.index("AS mooncake-src-local"):gpu.index("AS mooncake\n")]
    assert "COPY build/mooncake-src/" in local
    assert 'grep -qx "mooncake=${MOONCAKE_COMMIT}" /src/mooncake/.pdrepro-source' in local


def test_the_sglang_stage_copies_a_stamped_tree_or_fetches():
    gpu = (ROOT / "docker" / "gpu.Dockerfile").read_text()
    local = gpu[gpu.index("AS sglang-src-local"):gpu.index("AS sglang-src\n")]
    assert "COPY build/sglang-src/ /src/sglang/" in local
    assert 'grep -qx "sglang=${SGLANG_COMMIT}" /src/sglang/.pdrepro-source' in local
    assert "FROM sglang-src-${SGLANG_SOURCE} AS sglang-src" in gpu
    assert "COPY --from=sglang-src /src/sglang /src/sglang" in gpu
    ignore = (ROOT / "docker" / "gpu.Dockerfile.dockerignore").read_text().split()
    assert "!build/sglang-src/" in ignore and "!build/mooncake-src/" in ignore
