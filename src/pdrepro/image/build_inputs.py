"""``make build``'s first step: are the GPU image's inputs usable?

The GPU build runs for an hour or more; a wrong digest, a stale lock or an
unreachable source should stop it in a second, not halfway through. Each check
returns one line naming the input and the fix, or None; the first problem
ends the run with status 2, before anything is downloaded or built.

    python -m pdrepro.image.build_inputs --base IMAGE@sha256:... [--source mooncake=DIR]
        [--source sglang=DIR] [--mirror URL] [--wheelhouse DIR] [--no-remote]

Standard library only, so make can run it from the checkout before any
environment exists (``PYTHONPATH=src python3 -m pdrepro.image.build_inputs``).
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from ..core.errors import UserError
from ..core.pins import parse_env_file
from ..host.tools import ToolMissing, ToolTimeout, capture
from . import gpulock

_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
_BASE_REF = re.compile(r"^[a-z0-9][a-z0-9._/:-]*:[A-Za-z0-9_.-]+@(sha256:[0-9a-f]{64})$")
_WHEEL = re.compile(r"^([^-]+)-([^-]+)-.*\.whl$")

# Sources the image builds from: the pin keys of their repository and commit.
SOURCES = {"mooncake": ("MOONCAKE_REPO", "MOONCAKE_COMMIT"), "sglang": ("SGLANG_REPO", "SGLANG_COMMIT")}
LOCKS = ("docker/gpu-requirements.lock", "docker/mooncake-build-tools.lock")


@dataclass
class Inputs:
    root: Path
    pins: dict[str, str]
    base: str | None = None
    sources: dict[str, Path] = field(default_factory=dict)   # local checkouts given by the caller
    mirror: str = ""
    wheelhouse: Path | None = None                           # only for air-gapped builds
    remote: bool = True


def check_base(inputs: Inputs) -> str | None:
    digest = inputs.pins.get("CUDA_BASE_DIGEST", "")
    if not _DIGEST.match(digest):
        return (f"CUDA_BASE_DIGEST={digest!r} in docker/versions.env is not sha256:<64 hex digits>; "
                "pin the base image by its full digest")
    if inputs.base is not None and not _BASE_REF.match(inputs.base):
        return (f"GPU_BASE={inputs.base!r} is not NAME:TAG@sha256:<64 hex digits>; "
                "pin the base by tag and full digest, or leave GPU_BASE unset")
    return None


def check_locks(inputs: Inputs) -> str | None:
    root = inputs.root
    try:
        problems = gpulock.lock_problems(root / LOCKS[0], root / "docker/gpu-requirements.in", inputs.pins)
        if problems:
            return problems[0]
        main = gpulock.parse_lock((root / LOCKS[0]).read_text(), LOCKS[0])
        tools_path = root / LOCKS[1]
        if not tools_path.is_file():
            return f"{LOCKS[1]} is missing; run `make lock`"
        for tool in gpulock.parse_lock(tools_path.read_text(), LOCKS[1]).values():
            locked = main.get(tool.name)
            if locked is None or locked.version != tool.version:
                return (f"{LOCKS[1]} has {tool.name}=={tool.version} but {LOCKS[0]} has "
                        f"{locked.version if locked else 'none'}; run `make lock`")
    except UserError as exc:
        return str(exc)
    return None


def _git(args: list[str], timeout: float) -> tuple[int, str]:
    """(exit status, stdout when it succeeded else the last line of stderr)."""
    try:
        proc = capture(["git", *args], timeout)
    except ToolMissing:
        return 127, "git not found on PATH"
    except ToolTimeout:
        return 124, f"no answer within {timeout:.0f} s"
    if proc.returncode == 0:
        return 0, proc.stdout.strip()
    lines = proc.stderr.strip().splitlines()
    return proc.returncode, lines[-1] if lines else ""


def _remote_url(url: str, mirror: str) -> str:
    if mirror and url.startswith("https://github.com/"):
        return mirror.rstrip("/") + "/" + url[len("https://github.com/"):]
    return url


def check_sources(inputs: Inputs) -> str | None:
    """A local checkout given for a source must hold the pinned commit; otherwise its repository must answer.

    Hook: the Makefile passes ``--source NAME=DIR`` for each local source context it gives the build.
    """
    for name, (repo_key, commit_key) in SOURCES.items():
        commit = inputs.pins.get(commit_key, "")
        local = inputs.sources.get(name)
        if local is not None:
            if not local.is_dir():
                return f"{name} source {local} is not a directory; give a checkout of {commit}"
            stamp = local / ".pdrepro-source"
            if stamp.is_file():
                # A tree made by docker/source-tree.sh: its stamp names the commit it was cut at.
                if f"{name}={commit}" not in stamp.read_text().split():
                    return (f"{name} source {local} was assembled from another commit than {commit_key}={commit}; "
                            f"rerun make build with {name.upper()}_GIT=<a clone holding {commit}>")
            elif (local / ".git").exists():
                code, head = _git(["-C", str(local), "rev-parse", "HEAD"], 20)
                if code != 0:
                    return f"{name} source {local}: git rev-parse HEAD failed ({head}); give a checkout of {commit}"
                if head != commit:
                    return (f"{name} source {local} is at {head}, not {commit_key}={commit}; "
                            f"check out {commit} there")
            elif not any(local.iterdir()):
                return f"{name} source {local} is empty; give a checkout of {commit}"
            continue
        if not inputs.remote:
            continue
        url = _remote_url(inputs.pins.get(repo_key, ""), inputs.mirror)
        code, out = _git(["ls-remote", "--exit-code", url, "HEAD"], 30)
        if code != 0:
            return (f"{name} source {url} cannot be reached ({out or f'git exit {code}'}); "
                    f"give a local checkout of {commit} or a GITHUB_MIRROR that serves it")
    return None


def check_wheelhouse(inputs: Inputs) -> str | None:
    """Air-gapped builds: every locked wheel must already be in the wheelhouse."""
    if inputs.wheelhouse is None:
        return None
    try:
        locked = gpulock.parse_lock((inputs.root / LOCKS[0]).read_text(), LOCKS[0])
    except UserError as exc:
        return str(exc)
    have = set()
    if inputs.wheelhouse.is_dir():
        for wheel in inputs.wheelhouse.glob("*.whl"):
            match = _WHEEL.match(wheel.name)
            if match:
                have.add((gpulock.normalize(match.group(1)), match.group(2)))
    missing = [f"{p.name}=={p.version}" for p in locked.values() if (p.name, p.version) not in have]
    if missing:
        shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
        return (f"{inputs.wheelhouse} lacks {len(missing)} of the {len(locked)} locked wheels ({shown}); "
                "run `make gpu-wheelhouse` on a connected machine and copy it over")
    return None


CHECKS = (check_base, check_locks, check_wheelhouse, check_sources)


def first_problem(inputs: Inputs) -> str | None:
    for check in CHECKS:
        problem = check(inputs)
        if problem:
            return problem
    return None


def _source(value: str) -> tuple[str, Path]:
    name, sep, path = value.partition("=")
    if not sep or name not in SOURCES or not path:
        raise argparse.ArgumentTypeError(f"expected NAME=DIR with NAME one of {', '.join(SOURCES)}")
    return name, Path(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pdrepro.image.build_inputs", description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=Path("."), help="bundle checkout (default: .)")
    parser.add_argument("--base", help="the base image reference the build will use (GPU_BASE)")
    parser.add_argument("--source", type=_source, action="append", default=[], metavar="NAME=DIR",
                        help="a local checkout given to the build (mooncake, sglang)")
    parser.add_argument("--mirror", default="", help="GITHUB_MIRROR the build rewrites GitHub URLs to")
    parser.add_argument("--wheelhouse", type=Path, help="air-gapped build: the folder pip may only read")
    parser.add_argument("--no-remote", dest="remote", action="store_false",
                        help="do not ask the source repositories whether they answer")
    args = parser.parse_args(argv)
    try:
        pins = parse_env_file(args.root / "docker" / "versions.env")
    except (UserError, OSError) as exc:
        print(f"make build: {exc}", file=sys.stderr)
        return 2
    inputs = Inputs(root=args.root, pins=pins, base=args.base, sources=dict(args.source),
                    mirror=args.mirror, wheelhouse=args.wheelhouse, remote=args.remote)
    problem = first_problem(inputs)
    if problem:
        print(f"make build: {problem}", file=sys.stderr)
        return 2
    print("make build: inputs ok (base digest, locks, sources"
          + (", wheelhouse" if inputs.wheelhouse else "") + ")")
    return 0


if __name__ == "__main__":
    sys.exit(main())
