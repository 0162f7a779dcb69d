"""The GPU-to-NIC map the servers were started with, kept in the run (RUN/ib_devices.json) for the per-rail witness.

Each server says in its /server_info which RDMA devices it was told to use (``disaggregation_ib_device``): a path to
a JSON map of GPU id to device names (what every rendered target passes), a comma list of device names (every GPU
uses them), or nothing (the transfer backend picks the devices itself). The sweep asks the servers anyway; it
writes down what they say, so the rails are judged whoever launched the stack and however (compose, Kubernetes,
Slurm, `stack up`), with no copy by hand. Where the servers name no map, or two servers name different ones, or the
file they name is not readable here, nothing is written and the rails stay not measured (which fails a scenario
whose KV must cross the fabric: analysis/rails.py says why in the report).
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


def servers_map(server_info: dict | None, gpus: int) -> str | None:
    """The one map every disaggregated server names (None: none names one, they disagree, or it is unreadable)."""
    if not isinstance(server_info, dict):
        return None
    values = set()
    for role in SERVER_ROLES:
        facts = server_info.get(role)
        value = facts.get(INFO_KEY) if isinstance(facts, dict) else None
        if not isinstance(value, str) or not value.strip():
            return None
        values.add(value.strip())
    return map_text(values.pop(), gpus) if len(values) == 1 else None


def record_servers_map(run: RunDir, scenario, server_info: dict | None) -> bool:
    """Writes RUN/ib_devices.json from what the servers say, unless the run already holds one (given with
    --ib-devices, or kept by the sweep this run resumes); True when the run holds a map afterwards."""
    kept = run.root / MAP_FILE
    if kept.is_symlink() or kept.exists():
        return kept.is_file() and not kept.is_symlink()
    text = servers_map(server_info, gpus_in_use(scenario))
    if text is None:
        return False
    write_file(kept, text, "pdrepro sweep", root=run.root)
    return True
