"""What ran, set against what docker/versions.env pins: one row per component.

A run can only be read as a reproduction of the published one when the
software that served it is the pinned software. The sweep records what it
found (provenance.json): each server's own version (its /server_info), and on
the sweep's host the Python packages, torch with its CUDA build, the image's
build args. Here each is compared with its pin:

* SGLang: the image builds the pinned commit as ``<release>+g<commit>``; a
  release wheel (``0.5.15.post1``) is the nearest release, not the commit.
* sglang-router: SGLANG_ROUTER_VERSION.
* Mooncake: the image builds MOONCAKE_COMMIT (it records the commit it was
  built from); any wheel (mooncake-transfer-engine, -cuda13, -non-cuda) is a
  release near it, not the pin.
* torch: the version the GPU lock resolves (docker/gpu-requirements.lock).
* CUDA: CUDA_VERSION's major.minor against torch's CUDA build.
* The commits provenance.json's ``pins`` names (what versions.env said when the
  sweep ran) against SGLANG_COMMIT and MOONCAKE_COMMIT: a run pinned to other
  commits is no reproduction of these.

``match`` is None where the run did not record the component (or no pin
exists here): unknown is never counted as a difference, and the row says so.
"""

from __future__ import annotations

import re
from pathlib import Path

from .. import backends, engines
from ..backends import TransferBackend
from ..core.pins import load_pins, versions_file
from ..engines import ServingEngine
from ..parsers.pylock import parse_lock
from ..scenario.seams import DEFAULT_BACKEND, DEFAULT_ENGINE


def lock_path() -> Path:
    """The GPU lock beside versions.env (a source checkout; an installed wheel has none)."""
    return versions_file().parent / "gpu-requirements.lock"


def _locked_torch() -> str | None:
    lock = lock_path()
    try:
        found = parse_lock(lock.read_text(), str(lock)).get("torch")
    except (OSError, ValueError):
        return None
    return found.version if found else None


# A commit is named by at least 12 hex digits of it: fewer (git's 7 included) are shared by other commits of a
# repository this size often enough that "matches" would be a guess.
MIN_COMMIT_DIGITS = 12
_HEX = re.compile(r"[0-9a-f]+")


def names_commit(ran: object, pinned: str | None) -> bool:
    """Whether ``ran`` (a recorded commit, or the tail of a ``+g<commit>`` version) names the pinned commit."""
    if not isinstance(ran, str) or not pinned:
        return False
    ran = ran.lower()
    return len(ran) >= MIN_COMMIT_DIGITS and _HEX.fullmatch(ran) is not None and pinned.lower().startswith(ran)


def _row(item: str, ran: str | None, pinned: str | None, match: bool | None, where: str) -> dict:
    return {"item": item, "ran": ran, "pinned": pinned, "match": match if ran and pinned else None, "source": where}


def _release(version: str) -> str:
    return version.split("+", 1)[0]


def _backend_rows(backend: TransferBackend, versions: dict, packages: dict, image: dict, pins: dict) -> list[dict]:
    """The backend's row where it pins a commit the image builds: the build, else a wheel, else an unnamed install."""
    pin = next(iter(backend.pin_keys.values()), None)
    if pin is None:
        return []
    commit = pins.get(pin, "")
    wheel = (packages.get(backend.wheel_label) if backend.wheel_label else None) or {}
    built_from = image.get(backend.image_build_key) if backend.image_build_key else None
    probe = (versions.get(backend.import_probe_key) if backend.import_probe_key else None) or {}
    if isinstance(built_from, str) and built_from:
        ran, match = f"build of {built_from[:12]}", names_commit(built_from, commit)
    elif wheel.get("found"):
        ran, match = f"{wheel.get('distribution')} {wheel.get('version')} (a wheel)", False
    elif probe.get("importable"):
        # Importable, yet neither a known distribution nor the image's build: whatever it is, not the pin.
        ran, match = f"an unnamed install ({probe.get('module')})", False
    else:
        ran, match = None, None
    return [_row(backend.label, ran, f"build of {commit[:12]}" if commit else None, match,
                 "the image's build args" if built_from else "the sweep host's Python")]


def what_ran(provenance: dict | None, pins: dict[str, str] | None = None, engine: ServingEngine | None = None,
             backend: TransferBackend | None = None) -> list[dict]:
    """The rows; empty when the run has no provenance.json. ``engine`` and ``backend`` are the run's (default:
    the scenario defaults, which every run older than the seams used)."""
    if not provenance:
        return []
    engine = engine or engines.engine(DEFAULT_ENGINE)
    backend = backend or backends.backend(DEFAULT_BACKEND)
    pins = load_pins() if pins is None else pins
    raw_versions = provenance.get("versions")
    versions: dict = raw_versions if isinstance(raw_versions, dict) else {}
    packages = versions.get("packages") or {}
    image = versions.get("image") or {}
    rows = []

    engine_pin = next(iter(engine.pin_keys.values()), "")
    commit, release = pins.get(engine_pin, ""), pins.get(engine.release_pin_key, "")
    pinned_engine = f"{release}+g{commit[:12]}" if commit else None
    for role, info in sorted((provenance.get("server_info") or {}).items()):
        ran = info.get("version") if isinstance(info, dict) else None
        ran = ran if isinstance(ran, str) else None
        suffix = ran.split("+g", 1)[1] if ran and "+g" in ran else ""
        built = names_commit(suffix, commit)
        rows.append(_row(f"{engine.label} ({role} server)", ran, pinned_engine, built, f"{role} /server_info"))

    router = packages.get(engine.router_distribution) or {}
    rows.append(_row(engine.router_distribution, router.get("version"), pins.get(engine.router_pin_key),
                     router.get("version") == pins.get(engine.router_pin_key), "the sweep host's Python"))

    rows += _backend_rows(backend, versions, packages, image, pins)

    # The commits the sweep read from versions.env when it ran: a run pinned to other commits is not one of these.
    raw_pins = provenance.get("pins")
    recorded: dict = raw_pins if isinstance(raw_pins, dict) else {}
    named = [(engine.label, key, pin) for key, pin in engine.pin_keys.items()]
    named += [(backend.label, key, pin) for key, pin in backend.pin_keys.items()]
    for item, key, pin in named:
        ran, pinned = recorded.get(key), pins.get(pin)
        ran = ran if isinstance(ran, str) and ran else None
        # A short commit names the pin when it is its prefix, of MIN_COMMIT_DIGITS hex digits at least.
        same = names_commit(ran, pinned)
        # The pins are what the sweep was told, not what ran: where the component itself ran otherwise, the told
        # pin "matching" would be read as the run matching, so it is left open and says why.
        ran_otherwise = any(r["match"] is False for r in rows if r["item"].startswith(item))
        rows.append(_row(f"{item} commit (provenance pins)", ran, pinned, None if same and ran_otherwise else same,
                         "provenance.json pins (what the sweep was told; what ran differs, see above)"
                         if same and ran_otherwise else "provenance.json pins"))

    torch = versions.get("torch") or {}
    locked = _locked_torch()
    ran = torch.get("version")
    rows.append(_row("torch", ran, locked, ran is not None and _release(ran) == locked, "the sweep host's Python"))
    cuda_pin = pins.get("CUDA_VERSION")
    build = torch.get("cuda_build")
    rows.append(_row("CUDA (torch's build)", build, cuda_pin,
                     bool(build and cuda_pin and cuda_pin.split(".")[:2] == str(build).split(".")[:2]),
                     "the sweep host's torch"))
    return rows


def differences(rows: list[dict]) -> list[dict]:
    return [r for r in rows if r["match"] is False]


def describe(rows: list[dict]) -> str:
    """One line naming what differs from the pins, for issues and check details."""
    bad = differences(rows)
    if not bad:
        unknown = [r["item"] for r in rows if r["match"] is None]
        return "what ran matches docker/versions.env" + (f" (not recorded: {', '.join(unknown)})" if unknown else "")
    return "what ran differs from docker/versions.env: " + "; ".join(
        f"{r['item']} ran {r['ran']}, pinned {r['pinned']}" for r in bad)

