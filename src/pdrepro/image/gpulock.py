"""The GPU image's hash-locked Python environment, read and held to the pins.

``docker/gpu-requirements.lock`` is what `make lock` (uv) writes: one
``name==version`` per package followed by its ``--hash=sha256:...`` options.
The image installs it with ``--require-hashes``; this module states what a
usable lock is (every package exact, every package hashed), whether it agrees
with ``versions.env`` and with the requirements SGLang declares at the pin
(``docker/gpu-requirements.in``), and whether it mixes CUDA major versions.
Standard library only: ``make build`` runs it before anything is installed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import UserError
from ..parsers.pylock import NAME, Locked, logical_lines, normalize, parse_lock

_REQUIREMENT = re.compile(rf"^({NAME})\s*(\[[^\]]*\])?\s*([^;]*?)\s*(?:;(.*))?$")

# Wheels built for one CUDA major carry it in the name (nvidia-nccl-cu12,
# nvidia-cutlass-dsl-libs-cu13, cupy-cuda12x) or in a local version (+cu128).
_NAME_CUDA = re.compile(r"-cu(?:da)?(\d{2})x?$")
_LOCAL_CUDA = re.compile(r"\+cu(\d{2,3})\b")
# Packages whose own major version is the CUDA major they belong to.
CUDA_VERSIONED = frozenset({
    "cuda-toolkit", "cuda-python", "cuda-bindings", "nvidia-cuda-runtime", "nvidia-cuda-nvrtc",
    "nvidia-cuda-nvcc", "nvidia-cuda-cupti", "nvidia-cuda-crt", "nvidia-nvjitlink",
})


@dataclass(frozen=True)
class Declared:
    """One requirement line of the resolver input."""

    name: str       # normalized
    specifier: str  # "==2.11.0", ">=13.0", "" ...
    marker: str     # "" when the line has none

    @property
    def exact(self) -> str | None:
        """The version a ``==`` pin names, or None."""
        match = re.fullmatch(r"==\s*([^,\s*]+)", self.specifier)
        return match.group(1) if match else None


def parse_requirements_in(text: str, source: str = "requirements.in") -> list[Declared]:
    """Requirement lines of a resolver input; ``-r`` includes are left to the caller."""
    declared = []
    for number, line in logical_lines(text):
        if line.startswith("-"):
            continue
        match = _REQUIREMENT.match(line)
        if not match:
            raise UserError(f"{source}:{number}: cannot read requirement {line!r}")
        declared.append(Declared(normalize(match.group(1)), match.group(3).replace(" ", ""),
                                 (match.group(4) or "").strip()))
    return declared


def cuda_major_of(package: Locked) -> int | None:
    """The CUDA major a locked wheel is built for, when its name or version says so."""
    named = _NAME_CUDA.search(package.name)
    if named:
        return int(named.group(1))
    local = _LOCAL_CUDA.search(package.version)
    if local:
        digits = local.group(1)
        return int(digits[:2])
    if package.name in CUDA_VERSIONED:
        return int(package.version.split(".", 1)[0])
    return None


def cuda_mismatches(packages: dict[str, Locked], cuda_major: int) -> list[str]:
    """``name==version (CUDA N)`` for every locked wheel of another CUDA major."""
    out = []
    for package in packages.values():
        major = cuda_major_of(package)
        if major is not None and major != cuda_major:
            out.append(f"{package.name}=={package.version} (CUDA {major})")
    return out


def declared_mismatches(packages: dict[str, Locked], declared: list[Declared]) -> list[str]:
    """Exact pins of the resolver input the lock does not hold at that version.

    Lines with a marker are skipped: they may not apply to the image's platform.
    """
    out = []
    for req in declared:
        if req.marker:
            continue
        locked = packages.get(req.name)
        if locked is None:
            out.append(f"{req.name} is declared ({req.specifier or 'any version'}) but not locked")
        elif req.exact is not None and locked.version != req.exact:
            out.append(f"{req.name}=={locked.version} is locked but {req.name}=={req.exact} is declared")
    return out


def read_requirements_in(path: Path) -> list[Declared]:
    """A resolver input with its ``-r`` includes (relative to the including file)."""
    declared = parse_requirements_in(path.read_text(), str(path))
    for line in path.read_text().splitlines():
        stripped = line.strip()
        if stripped.startswith("-r "):
            declared += read_requirements_in(path.parent / stripped[3:].strip())
    return declared


def nixl_problems(packages: dict[str, Locked], pins: dict[str, str], where: str = "the lock") -> list[str]:
    """NIXL at NIXL_VERSION: the meta package SGLang imports and the backend wheel of the image's CUDA major
    (the meta package picks it at import time; without it `import nixl` fails in the image)."""
    want = pins.get("NIXL_VERSION")
    cuda = pins.get("CUDA_VERSION", "")
    if not want or not re.match(r"^\d+\.", cuda):
        return []
    out = []
    for name in ("nixl", f"nixl-cu{cuda.split('.', 1)[0]}"):
        locked = packages.get(name)
        if locked is None or locked.version != want:
            out.append(f"{where} has {name} {locked.version if locked else 'missing'} but NIXL_VERSION={want} in "
                       "versions.env; fix docker/gpu-requirements.in and run `make lock`")
    return out


def lock_problems(lock_path: Path, in_path: Path, pins: dict[str, str]) -> list[str]:
    """Everything that makes the lock unusable for the pinned image, one line each; [] when none."""
    if not lock_path.is_file():
        return [f"{lock_path} is missing; run `make lock`"]
    packages = parse_lock(lock_path.read_text(), str(lock_path))
    problems = []
    router = packages.get("sglang-router")
    want_router = pins.get("SGLANG_ROUTER_VERSION")
    if router is None or router.version != want_router:
        problems.append(f"{lock_path} has sglang-router {router.version if router else 'missing'} but "
                        f"SGLANG_ROUTER_VERSION={want_router} in versions.env; run `make lock`")
    cuda = pins.get("CUDA_VERSION", "")
    if re.match(r"^\d+\.", cuda):
        wrong = cuda_mismatches(packages, int(cuda.split(".", 1)[0]))
        if wrong:
            problems.append(f"{lock_path} holds wheels for another CUDA than CUDA_VERSION={cuda}: "
                            + ", ".join(wrong) + "; fix the requirements and run `make lock`")
    problems += nixl_problems(packages, pins, str(lock_path))  # after the CUDA drift, which it may follow from
    if in_path.is_file():
        for line in declared_mismatches(packages, read_requirements_in(in_path)):
            problems.append(f"{lock_path}: {line} in {in_path}; run `make lock`")
    else:
        problems.append(f"{in_path} is missing; restore it from the bundle")
    return problems
