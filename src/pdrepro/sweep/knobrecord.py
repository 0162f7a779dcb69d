"""The tuning knobs of a run, for provenance.json: what the scenario set, and what each server was given.

A setting only explains a figure if it reached the server, so both sides are recorded: the scenario's
launch.env (each knob with its reader, default and whether it acts only over RDMA, from the generated lists)
and, where `pdrepro stack up` started the servers into this run folder, each server's environment as its
record (stack.json) holds it. Containers' environments are recorded by provenance's server_containers.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from .. import backends, engines
from ..core import runfile
from ..core.errors import UserError
from ..rundir.layout import STACK_FILE
from ..scenario import knobs, launch_env
from ..scenario.seams import engine_of

# The records' roles whose processes are servers (the router reads no knob).
SERVER_ROLES = ("prefill", "decode", "regular")


def describe(name: str, value: str) -> dict:
    """One setting with what the generated lists say of it (nothing for a variable known by prefix only)."""
    knob = knobs.lookup(name)
    if knob is None:
        return {"value": value, "listed": False}
    return {"value": value, "listed": True, "reader": knob.reader, "default": knob.default,
            "rdma_only": knob.rdma_only, "source": knob.source}


def tunables(env: Mapping[str, str], scenario) -> dict[str, str]:
    """The variables of ``env`` an engine or backend reads as settings, whichever backend the site ran (it may
    override the scenario's): the plan's own (GPUs, address, backend switch) are not knobs."""
    owned = launch_env.plan_owned(engine_of(scenario))
    prefixes = tuple(p for n in engines.names() for p in engines.engine(n).env_prefixes)
    prefixes += tuple(p for n in backends.names() for p in backends.backend(n).env_prefixes)
    return {k: v for k, v in sorted(env.items()) if k not in owned
            and (k.startswith(prefixes) or k in launch_env.SHARED_TUNABLES or knobs.lookup(k) is not None)}


def collect(scenario, run_root: Path | None) -> dict:
    launch = getattr(scenario, "launch", None)
    set_by_scenario = tunables(launch.env, scenario) if launch is not None else {}
    out: dict = {"scenario": {k: describe(k, v) for k, v in set_by_scenario.items()}, "servers": None}
    servers = _stack_servers(Path(run_root) / STACK_FILE) if run_root is not None else None
    if isinstance(servers, str):  # a record that is not one is said, not fatal to the run's provenance
        out["servers_error"] = servers
    elif servers is not None:
        out["servers"] = {name: tunables(env, scenario) for name, env in servers.items()}
    return out


def _stack_servers(path: Path) -> dict[str, dict[str, str]] | str | None:
    """Server name -> the environment stack up gave it, from its record; None without one, the reason where
    the file is not a record of that shape. Read raw (the launch package sits below the sweep's importers)."""
    if not path.is_file():
        return None
    try:
        data = runfile.read_json(path)
    except (OSError, ValueError, RecursionError, UserError) as exc:
        return f"{path}: unreadable ({exc})"
    procs = data.get("processes") if isinstance(data, dict) else None
    if not isinstance(procs, list):
        return f"{path}: holds no list of processes"
    out: dict[str, dict[str, str]] = {}
    for p in procs:
        if not (isinstance(p, dict) and p.get("role") in SERVER_ROLES and isinstance(p.get("name"), str)
                and isinstance(p.get("env"), dict)):
            continue
        out[p["name"]] = {str(k): str(v) for k, v in p["env"].items() if isinstance(v, str)}
    return out
