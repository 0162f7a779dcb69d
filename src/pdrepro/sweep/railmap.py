"""The GPU-to-NIC map the servers were started with, kept in the run (RUN/ib_devices.json) for the per-rail witness.

Each server says in its /server_info which RDMA devices it was told to use (``disaggregation_ib_device``): a path to
a JSON map of GPU id to device names (what every rendered target passes), a comma list of device names (every GPU
uses them), or nothing (the transfer backend picks the devices itself). The sweep asks the servers anyway; it
writes down what they say, so the rails are judged whoever launched the stack and however (compose, Kubernetes,
Slurm, `stack up`), with no copy by hand. Where the servers name no map, or two servers name different ones, or the
file they name is not readable here, nothing is written and the rails stay not measured (which fails a scenario
whose KV must cross the fabric: analysis/rails.py says why in the report).

A map given with `pdrepro sweep --ib-devices FILE` is a claim about how the servers were started; where the servers
name a readable map of their own, the two are compared by meaning (the devices each GPU in use is given, whatever
the spelling) before the first length is measured, and a disagreement is refused (``disagreement``).
"""

from __future__ import annotations

import json
from pathlib import Path

from ..core import runfile
from ..core.errors import UserError
from ..core.roles import SERVER_ROLES
from ..core.safewrite import write_file
from ..rundir import RunDir
from ..scenario.site import check_ib_devices

MAP_FILE = "ib_devices.json"
INFO_KEY = "disaggregation_ib_device"


def gpus_in_use(scenario) -> int:
    """GPUs 0..n-1 of a node that serve the run: TP of a server x servers on the node, the larger role's."""
    return max(scenario.parallel.tp(role) * getattr(scenario.topology, role).servers_per_node for role in SERVER_ROLES)


def map_text(value: str, gpus: int) -> str | None:
    """The map a server's ``disaggregation_ib_device`` stands for, as JSON text; None where it is not readable here
    (a file on another node, not a map SGLang accepts)."""
    if value.endswith(".json"):
        path = Path(value)
        try:
            check_ib_devices(path, gpus)
            return runfile.read_text(path)
        except (UserError, OSError, UnicodeDecodeError):
            return None
    devices = ",".join(d.strip() for d in value.split(",") if d.strip())
    return json.dumps({str(g): devices for g in range(gpus)}, indent=2) + "\n" if devices else None


def servers_value(server_info: dict | None) -> str | None:
    """The one ``disaggregation_ib_device`` every disaggregated server names (None: one names none, or they differ)."""
    if not isinstance(server_info, dict):
        return None
    values = set()
    for role in SERVER_ROLES:
        facts = server_info.get(role)
        value = facts.get(INFO_KEY) if isinstance(facts, dict) else None
        if not isinstance(value, str) or not value.strip():
            return None
        values.add(value.strip())
    return values.pop() if len(values) == 1 else None


def servers_map(server_info: dict | None, gpus: int) -> str | None:
    """The one map every disaggregated server names (None: none names one, they disagree, or it is unreadable)."""
    value = servers_value(server_info)
    return map_text(value, gpus) if value is not None else None


def devices_by_gpu(text: str, gpus: int) -> dict[int, frozenset[str]]:
    """What a map means for the GPUs in use: GPU -> the set of devices it is given (order and spaces are spelling;
    GPUs past those in use are never read by the servers). A map that is not one reads as empty."""
    try:
        data = json.loads(text)
    except ValueError:
        return {}
    if not isinstance(data, dict):
        return {}
    return {g: frozenset(d.strip() for d in str(data.get(str(g), "")).split(",") if d.strip()) for g in range(gpus)}


def _spelled(meaning: dict[int, frozenset[str]]) -> str:
    return ", ".join(f"GPU {g} -> {','.join(sorted(d)) or 'nothing'}" for g, d in sorted(meaning.items()))


def disagreement(ours: str, where: str, server_info: dict | None, gpus: int) -> str | None:
    """The refusal when the map the run holds or is given (``ours``, named ``where``) is not the one the servers
    say they were started with; None where they agree or the servers' map is unknown here (named by none, two
    different ones, or a file not readable on this host: then the given map is the only evidence and is kept)."""
    value = servers_value(server_info)
    theirs = map_text(value, gpus) if value is not None else None
    if theirs is None:
        return None
    mine, their_meaning = devices_by_gpu(ours, gpus), devices_by_gpu(theirs, gpus)
    if mine == their_meaning:
        return None
    return (f"{where} ({_spelled(mine)}) is not the map the servers say they were started with, {value} "
            f"({_spelled(their_meaning)}): the per-rail witness would judge ports the KV never took; pass the servers' "
            "map, or leave --ib-devices out and the sweep records theirs")


def record_servers_map(run: RunDir, scenario, server_info: dict | None, given: Path | None = None) -> bool:
    """Keeps RUN/ib_devices.json: the map given with --ib-devices, or else the one the servers name, unless the run
    already holds one (kept by the sweep this run resumes); True when the run holds a map afterwards.

    A given or kept map the servers contradict is refused (UserError), not kept with a failed check later: the
    servers' own word is the evidence of which ports they were told to use, it is known before the first length
    runs (this is called once the stack is healthy, ahead of the first bench client), and a whole sweep judged
    against the wrong rails would only end in a failure the user could have had at once. The given map is written
    only once the servers agree, so the refusal leaves nothing in the run that a rerun with the right map (or
    none) would trip over."""
    kept = run.root / MAP_FILE
    if kept.is_symlink() or (kept.exists() and not kept.is_file()):
        return False
    gpus = gpus_in_use(scenario)
    if kept.is_file():
        ours, where = runfile.read_text(kept), f"the run's {MAP_FILE} (kept when it began)"
    elif given is not None:
        ours, where = runfile.read_text(given), f"--ib-devices {given}"
    else:
        ours, where = None, ""
    if ours is not None:
        refusal = disagreement(ours, where, server_info, gpus)
        if refusal is not None:
            raise UserError(refusal)
        if kept.is_file():
            return True
    text = ours if ours is not None else servers_map(server_info, gpus)
    if text is None:
        return False
    write_file(kept, text, "pdrepro sweep", root=run.root)
    return True
