"""Which variables a scenario's launch.env may hand the servers, asked of the engine and backend registries.

A server reads its engine's variables and its transfer backend's (each names them by prefix), plus a few
shared tunables; the backend may require some (the published launch's own). Variables the launch plan sets
itself (the GPUs, the address a server advertises, the backend's switches) are refused here with the
option that sets them, so a scenario cannot change what runs behind the plan's back.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping

from .. import backends, engines
from ..backends import TransferBackend
from ..core.errors import UserError
from ..engines import ServingEngine
from . import knobs

# Read by the collective library under every engine and backend: not any one module's to name.
SHARED_TUNABLES = ("NCCL_IB_GID_INDEX",)
# What a process environment can carry as a name (POSIX: letters, digits, _, no leading digit): anything else
# breaks the env files and scripts the targets render, or never reaches the server as that name.
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
GPU_OPTION = "--gpus"
BACKEND_OPTION = "--transfer-backend"
ADDRESS_OPTION = "--prefill-ip/--decode-ip"


def plan_owned(engine: ServingEngine) -> dict[str, str]:
    """Each variable the launch plan sets itself, with the option that sets it."""
    owned = {"CUDA_VISIBLE_DEVICES": GPU_OPTION, "CUDA_DEVICE_ORDER": GPU_OPTION, engine.host_ip_env: ADDRESS_OPTION}
    for name in backends.names():
        owned.update(dict.fromkeys(backends.backend(name).plan_env, BACKEND_OPTION))
    return owned


def unknown(key: str) -> knobs.KnobList | None:
    """The generated list that should name ``key`` and does not (a typo, or a variable of another release)."""
    listed = knobs.covering(key)
    return listed if listed is not None and knobs.lookup(key) is None else None


def reads(engine: ServingEngine, backend: TransferBackend, key: str) -> bool:
    """Whether a server of this engine running this backend reads ``key`` (and the plan leaves it to the scenario)."""
    if key in plan_owned(engine) or unknown(key) is not None:
        return False
    return (key in SHARED_TUNABLES or key in backend.required_env
            or key.startswith((*engine.env_prefixes, *backend.env_prefixes)))


def reader(key: str) -> TransferBackend | ServingEngine | None:
    """The first backend (or engine) whose variables ``key`` is among, for an error that names it."""
    for name in backends.names():
        if key.startswith(backends.backend(name).env_prefixes) or key in backends.backend(name).required_env:
            return backends.backend(name)
    for name in engines.names():
        if key.startswith(engines.engine(name).env_prefixes):
            return engines.engine(name)
    return None


def check(env: Mapping[str, str], engine_name: str, backend_name: str, source: str, disaggregated: bool,
          backend_source: str | None = None) -> None:
    """One clear error for the first key of ``env`` the servers would not read, or a required one missing.
    ``backend_source``: where the backend was chosen, when not by the scenario (--transfer-backend)."""
    chosen_by = backend_source or "the scenario's launch.transfer_backend"
    engine, backend = engines.engine(engine_name), backends.backend(backend_name)
    owned = plan_owned(engine)
    for key in sorted(env):
        if not NAME.fullmatch(key):
            raise UserError(f"{source}: launch.env key {ascii(key)} is not an environment variable name; use "
                            "letters, digits and _ (not starting with a digit), e.g. SGLANG_DISAGGREGATION_QUEUE_SIZE")
        if "\0" in str(env[key]):
            raise UserError(f"{source}: launch.env.{key} holds a NUL character, which no process environment can "
                            "carry; give the value without it")
        if key in owned:
            raise UserError(f"{source}: launch.env.{key} is set by the launch plan, not the scenario; "
                            f"drop it and use {owned[key]}")
        listed = unknown(key)
        if listed is not None:
            raise UserError(f"{source}: launch.env.{key} is no variable {listed.source} reads ({nearest(key, listed)}; "
                            f"the list is {listed.file}, `pdrepro knobs` prints it)")
        if reads(engine, backend, key):
            continue
        other = reader(key)
        if other is not None:
            raise UserError(f"{source}: launch.env.{key} is read by {other.label} ({other.name}), not by "
                            f"{chosen_by} {backend.name}; drop it or run {other.name}")
        prefixes = ", ".join(f"{p}*" for p in (*engine.env_prefixes, *backend.env_prefixes))
        raise UserError(f"{source}: launch.env.{key} is not read by {engine.label} or {backend.label}; "
                        f"use {prefixes} or {', '.join(SHARED_TUNABLES)}")
    if disaggregated:
        missing(env, backend, f"{source}: launch.env", "the disaggregated stack")


def nearest(key: str, listed: knobs.KnobList) -> str:
    """The known names closest to a mistyped one, for the error."""
    close = difflib.get_close_matches(key, [k.name for k in listed.knobs], n=3, cutoff=0.6)
    return f"did you mean {', '.join(close)}?" if close else f"none of its {len(listed.knobs)} names is close"


def missing(env: Mapping[str, str], backend: TransferBackend, where: str, why: str) -> None:
    absent = [k for k in backend.required_env if k not in env]
    if absent:
        raise UserError(f"{where}.{absent[0]} is missing; {backend.label} ({backend.name}) in {why} needs "
                        f"{' and '.join(backend.required_env)}")


def server_env(env: Mapping[str, str], engine: ServingEngine, backend: TransferBackend) -> dict[str, str]:
    """The scenario's variables a server of this engine and backend reads, in the scenario's order: the
    required ones and the tunables. A site's --transfer-backend may pick another backend than the
    scenario's; that backend's variables go, the scenario's others stay behind."""
    return {k: v for k, v in env.items() if reads(engine, backend, k)}
