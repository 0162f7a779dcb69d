"""What software this machine or image actually runs, next to what the bundle pins.

Every probe reports honestly: a component that is absent is ``found: False``
with the reason, never a guessed version. Probes are independent and cheap
enough to record in every run's provenance.
"""

from __future__ import annotations

import ctypes.util
import importlib.metadata as md
import os
import re
import shutil
import sys
from pathlib import Path

from .. import __version__
from ..core import runfile
from ..core.pins import load_pins
from ..fabric.driver import Requirement
from ..host.nvidia import parse_driver_version
from ..host.tools import ToolMissing, ToolTimeout, capture

# Python distributions that decide PD behaviour or performance; several names
# because upstream renamed some of them between releases.
PACKAGES: dict[str, tuple[str, ...]] = {
    "sglang": ("sglang",),
    "sglang-router": ("sglang-router",),
    # PyPI ships the engine under a name per CUDA major (and one without CUDA); the image's build of the pin
    # installs the first name.
    "mooncake-transfer-engine": ("mooncake-transfer-engine", "mooncake-transfer-engine-cuda13",
                                 "mooncake-transfer-engine-cuda12", "mooncake-transfer-engine-non-cuda"),
    # NIXL, the other transfer backend: the backend wheel of one CUDA major carries the code and names the
    # version; the meta package (nixl) only picks it at import time.
    "nixl": ("nixl-cu13", "nixl-cu12", "nixl"),
    "torch": ("torch",),
    "sglang-kernel": ("sglang-kernel", "sgl-kernel"),
    "flashinfer": ("flashinfer-python",),
    "nccl": ("nvidia-nccl-cu12", "nvidia-nccl-cu13"),
    "transformers": ("transformers",),
}

# Shared libraries the GPU and RDMA paths load from the host or image.
LIBRARIES = ("cuda", "nvidia-ml", "cudart", "ibverbs", "mlx5", "rdmacm", "numa")

# OS packages of the RDMA userspace, each under the names distributions use
# (Ubuntu 24.04 and Debian 13 ship librdmacm1 as librdmacm1t64).
OS_PACKAGES: dict[str, tuple[str, ...]] = {
    "rdma-core": ("rdma-core",),
    "libibverbs1": ("libibverbs1", "libibverbs1t64"),
    "ibverbs-providers": ("ibverbs-providers",),
    "librdmacm1": ("librdmacm1", "librdmacm1t64", "librdmacm"),
    "perftest": ("perftest",),
    "infiniband-diags": ("infiniband-diags",),
}

# Kernel modules whose presence changes what Mooncake can do.
KERNEL_MODULES = ("nvidia", "nvidia_peermem", "ib_uverbs", "rdma_rxe", "mlx5_ib")

PIN_KEYS = ("SGLANG_COMMIT", "MOONCAKE_COMMIT", "CUDA_BASE_IMAGE", "CUDA_BASE_DIGEST",
            "SGLANG_ROUTER_VERSION", "MOONCAKE_WHEEL", "MOONCAKE_WHEEL_VERSION", "NIXL_VERSION")

# Set by the images (docker/*.Dockerfile) so a container knows what it was built from.
IMAGE_ENV = ("PDREPRO_IMAGE", "PDREPRO_IMAGE_SGLANG_COMMIT", "PDREPRO_IMAGE_MOONCAKE_COMMIT",
             "PDREPRO_IMAGE_BASE")


def _run(argv: list[str], timeout: float = 20) -> tuple[int | None, str]:
    try:
        done = capture(argv, timeout)
    except ToolMissing:
        return None, f"{argv[0]} not on PATH"
    except ToolTimeout:
        return None, f"{argv[0]}: TimeoutExpired"
    except OSError as exc:
        return None, f"{argv[0]}: {type(exc).__name__}"
    return done.returncode, done.output


def _found(version: str | None, **detail) -> dict:
    return {"found": version is not None, "version": version, **detail}


def python_package(names: tuple[str, ...]) -> dict:
    for name in names:
        try:
            return _found(md.version(name), distribution=name)
        except md.PackageNotFoundError:
            continue
    return _found(None, reason=f"not installed ({' / '.join(names)})")


def torch_details() -> dict:
    """CUDA and NCCL as torch was built with them; only when torch is installed."""
    try:
        md.version("torch")
    except md.PackageNotFoundError:
        return _found(None, reason="torch not installed")
    try:
        import torch  # noqa: PLC0415 - heavy, imported only when present
    except Exception as exc:  # a broken install is worth reporting, not raising
        return _found(None, reason=f"import failed: {type(exc).__name__}: {exc}")
    info = {"cuda_build": torch.version.cuda, "cuda_available": bool(torch.cuda.is_available())}
    try:
        nccl = torch.cuda.nccl.version()
        info["nccl"] = ".".join(map(str, nccl)) if isinstance(nccl, tuple) else str(nccl)
    except Exception:
        info["nccl"] = None
    if info["cuda_available"]:
        info["devices"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    return _found(torch.__version__, **info)


def mooncake_engine() -> dict:
    """Imports the engine in a child process: a broken binary must not take us down."""
    code = "import mooncake.engine as e; print(e.__file__)"
    try:
        proc = capture([sys.executable, "-c", code], timeout=60)
    except ToolMissing:
        return {"importable": False, "reason": "FileNotFoundError"}
    except ToolTimeout:
        return {"importable": False, "reason": "TimeoutExpired"}
    except OSError as exc:
        return {"importable": False, "reason": type(exc).__name__}
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
        return {"importable": False, "reason": last}
    bench = shutil.which("transfer_engine_bench")
    return {"importable": True, "module": proc.stdout.strip(), "transfer_engine_bench": bench}


def cuda_toolkit(root: Path = Path("/usr/local/cuda")) -> dict:
    version_json = root / "version.json"
    if version_json.is_file():
        try:
            data = runfile.read_json(version_json)
            return _found(data.get("cuda", {}).get("version"), source=str(version_json))
        except (OSError, ValueError, AttributeError):
            pass
    code, out = _run(["nvcc", "--version"])
    if code == 0:
        match = re.search(r"release [\d.]+, V([\d.]+)", out)
        if match:
            return _found(match.group(1), source="nvcc --version")
    return _found(None, reason="no /usr/local/cuda/version.json and no nvcc")


def nvidia_driver(proc_file: Path = Path("/proc/driver/nvidia/version")) -> dict:
    code, out = _run(["nvidia-smi", "--query-gpu=driver_version,name", "--format=csv,noheader"])
    if code == 0 and out:
        rows = [line.split(",") for line in out.splitlines() if line.strip()]
        try:
            version = parse_driver_version("\n".join(r[0] for r in rows))
        except ValueError:
            version = None
        if version is not None:
            return _found(version, gpus=[r[1].strip() for r in rows if len(r) > 1], source="nvidia-smi")
    if proc_file.is_file():
        match = re.search(r"Kernel Module\s+([\d.]+)", runfile.read_host(proc_file, runfile.PROC))
        if match:
            return _found(match.group(1), source=str(proc_file))
    return _found(None, reason="no nvidia-smi answer and no /proc/driver/nvidia/version")


def _with_requirement(found: dict, pins: dict[str, str]) -> dict:
    """The driver found, with the oldest branch the GPU image runs on (GPU_MIN_DRIVER)."""
    try:
        need = Requirement.from_pins(pins)
    except (KeyError, ValueError):
        return found
    return {**found, **need.report(found.get("version"))}


def _driver_detail(entry: dict) -> str:
    source = entry.get("source") or entry.get("reason", "")
    if "minimum_branch" not in entry:
        return source
    need = f"the GPU image (CUDA {entry['for_cuda']}) needs R{entry['minimum_branch']}+"
    verdict = {True: "ok", False: "TOO OLD", None: "not checked"}[entry["meets_minimum"]]
    return f"{source}; {need}: {verdict}"


def _ldconfig_paths() -> dict[str, str]:
    code, out = _run(["ldconfig", "-p"])
    if code is None:
        code, out = _run(["/sbin/ldconfig", "-p"])
    paths: dict[str, str] = {}
    if code == 0:
        for line in out.splitlines():
            match = re.match(r"\s*(\S+) \(([^)]*)\) => (\S+)", line)
            if match and "64" in match.group(2):
                paths.setdefault(match.group(1), match.group(3))
    return paths


def shared_library(name: str, known: dict[str, str]) -> dict:
    soname = ctypes.util.find_library(name)
    if not soname:
        return _found(None, reason=f"lib{name} not found by the dynamic loader")
    path = known.get(soname)
    version = soname.split(".so.", 1)[1] if ".so." in soname else soname
    if path:
        real = os.path.realpath(path)
        tail = Path(real).name.split(".so.", 1)
        if len(tail) == 2:
            version = tail[1]
        return _found(version, soname=soname, path=real)
    return _found(version, soname=soname)


def os_package(*names: str) -> dict:
    """The first of NAMES that dpkg or rpm has installed."""
    for name in names:
        code, out = _run(["dpkg-query", "-W", "-f=${Status}\t${Version}", name])
        if code == 0 and out.startswith("install ok installed"):
            return _found(out.split("\t", 1)[1], manager="dpkg", package=name)
        code, out = _run(["rpm", "-q", "--qf", "%{VERSION}-%{RELEASE}", name])
        if code == 0:
            return _found(out, manager="rpm", package=name)
    return _found(None, reason=f"not installed ({' / '.join(names)}; or no dpkg/rpm)")


def kernel_module(name: str, sys_module: Path = Path("/sys/module")) -> dict:
    mod = sys_module / name
    if not mod.exists():
        return {"loaded": False}
    version_file = mod / "version"
    version = runfile.read_host(version_file).strip() if version_file.is_file() else None
    return {"loaded": True, "version": version}


def collect_versions() -> dict:
    """Everything above as one JSON-ready dict (recorded in run provenance)."""
    pins = load_pins()
    libs = _ldconfig_paths()
    return {
        "schema_version": 1,
        "bundle": {"version": __version__},
        "pins": {key.lower(): pins.get(key) for key in PIN_KEYS},
        "image": {key.lower(): os.environ[key] for key in IMAGE_ENV if key in os.environ} or None,
        "python": {"version": sys.version.split()[0], "executable": sys.executable},
        "packages": {label: python_package(names) for label, names in PACKAGES.items()},
        "torch": torch_details(),
        "mooncake_engine": mooncake_engine(),
        "cuda_toolkit": cuda_toolkit(),
        "nvidia_driver": _with_requirement(nvidia_driver(), pins),
        "libraries": {name: shared_library(name, libs) for name in LIBRARIES},
        "os_packages": {label: os_package(*names) for label, names in OS_PACKAGES.items()},
        "kernel_modules": {name: kernel_module(name) for name in KERNEL_MODULES},
    }


def _cell(entry: dict) -> str:
    if entry.get("found"):
        return str(entry.get("version"))
    return "not found"


def table_rows(report: dict) -> list[tuple[str, str, str]]:
    """(component, version or 'not found', detail) for the human-readable table."""
    rows: list[tuple[str, str, str]] = [("pdrepro", report["bundle"]["version"], "this bundle")]
    rows.append(("python", report["python"]["version"], report["python"]["executable"]))
    for label, entry in report["packages"].items():
        rows.append((label, _cell(entry), entry.get("distribution") or entry.get("reason", "")))
    engine = report["mooncake_engine"]
    rows.append(("mooncake.engine", "importable" if engine["importable"] else "not importable",
                 engine.get("module") or engine.get("reason", "")))
    torch = report["torch"]
    if torch.get("found"):
        rows.append(("torch CUDA build", str(torch.get("cuda_build")),
                     f"cuda available: {torch.get('cuda_available')}, nccl {torch.get('nccl')}"))
    entry = report["cuda_toolkit"]
    rows.append(("CUDA toolkit", _cell(entry), entry.get("source") or entry.get("reason", "")))
    entry = report["nvidia_driver"]
    rows.append(("NVIDIA driver", _cell(entry), _driver_detail(entry)))
    for name, entry in report["libraries"].items():
        rows.append((f"lib{name}", _cell(entry), entry.get("path") or entry.get("soname") or entry.get("reason", "")))
    for name, entry in report["os_packages"].items():
        detail = f"{entry['manager']} {entry.get('package', name)}" if entry.get("found") else entry.get("reason", "")
        rows.append((name, _cell(entry), detail))
    for name, entry in report["kernel_modules"].items():
        rows.append((f"module {name}", "loaded" if entry["loaded"] else "not loaded", entry.get("version") or ""))
    for key, value in report["pins"].items():
        rows.append((f"pin {key}", str(value), "docker/versions.env"))
    if report["image"]:
        for key, value in report["image"].items():
            rows.append((key, value, "set by the image"))
    return rows
