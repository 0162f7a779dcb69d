"""Each RDMA port of a node judged on its own (the per-rail witness).

The NIC witness (witness.py) holds the bytes a node's ports moved in total against the KV; a run whose KV
crossed four ports as 70/10/10/10 moves the whole KV and passes it, while three of its rails idle (the
public case: one HCA carried about 200 GB and seven about 28 GB each). Here each port the run's
ib_devices.json maps a GPU in use to (GPUs 0..TP x servers per node - 1 on each node of a role, indices
inside the container) is a rail, judged from whichever side's counters were read:

  * its share of the bytes all the node's rails moved, as a multiple of the mean per rail, must reach the
    scenario's thresholds.min_rail_share (an even split is 1.0 on every rail);
  * its own bytes over the window between the readings cannot exceed its own line rate (sysfs's rate of the
    port): above it, the counters are not of this port in this window.

Ports the file does not name (storage, management NICs) are listed with their bytes but not judged. A run
without the file gets its ports listed and none judged, and says why.
"""

from __future__ import annotations

from pathlib import Path

from ..core import runfile
from ..core.errors import UserError
from ..core.units import GB
from ..rundir.counters import parse_rate

RAIL_MAP_FILE = "ib_devices.json"
# An ib_devices.json maps a few GPUs to a few device names: anything far larger is not one.
_MAX_MAP_BYTES = 64 * 1024


def rail_map(run_root: Path, gpus_in_use: dict[str, int]) -> tuple[dict[str, set[str]] | None, str | None]:
    """role -> the RDMA devices the run's ib_devices.json names for the GPUs that role uses on a node,
    or None and why the rails cannot be told apart from the other ports."""
    path = Path(run_root) / RAIL_MAP_FILE
    # Named relative to the run: the note travels into the report, which must read the same wherever the run lies.
    shown = f"the run's {RAIL_MAP_FILE}"
    fix = (f"the sweep keeps the map the servers report (/server_info disaggregation_ib_device) or the one "
           f"`pdrepro sweep --ib-devices FILE` names as RUN/{RAIL_MAP_FILE}; rerun the sweep with the servers started "
           "with a map (`pdrepro ib-devices`)")
    try:
        if path.is_symlink() or (path.exists() and not path.is_file()):
            return None, f"{shown} is not a plain file; {fix}"
        if not path.exists():
            return None, f"the run holds no {RAIL_MAP_FILE}, so no port is known to carry KV; {fix}"
        if path.stat().st_size > _MAX_MAP_BYTES:
            return None, f"{shown} is larger than any GPU-to-NIC map ({_MAX_MAP_BYTES} bytes at most); {fix}"
        data = runfile.read_json(path)
    except UserError as exc:
        return None, f"{shown}: {exc}; {fix}"
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        return None, f"{shown}: not readable JSON ({type(exc).__name__}); {fix}"
    if not isinstance(data, dict) or not data:
        return None, f"{shown}: not a JSON object of GPU id to device names such as {{\"0\": \"mlx5_0\"}}; {fix}"
    named: dict[str, set[str]] = {}
    for role, count in gpus_in_use.items():
        devices: set[str] = set()
        for gpu in range(count):
            value = data.get(str(gpu))
            if not isinstance(value, str) or not value.strip():
                return None, (f"{shown}: GPU {gpu} (used by the {role} servers) maps to no device names "
                              f"({value!r}); {fix}")
            devices |= {d.strip() for d in value.split(",") if d.strip()}
        named[role] = devices
    return named, None


def rails_of_node(role: str, counter: str, ports: dict[str, int], listed: list[str], named: set[str] | None,
                  window_s: float | None, rates: dict[str, str | None]) -> list[dict]:
    """One entry per port of the node: bytes (ports: port -> bytes moved in the KV's direction; a port in
    listed without bytes had no reading), whether it is a rail, and a judged rail's share and rate."""
    rails = sorted(p for p in listed if named is not None and p.split("/", 1)[0] in named)
    # A named device with no port in the readings carried nothing the counters saw: still a rail.
    seen = {p.split("/", 1)[0] for p in listed}
    missing = sorted(d for d in (named or ()) if d not in seen)
    carried = [ports.get(p) for p in rails]
    known = [b for b in carried if b is not None]
    mean = sum(known) / (len(rails) + len(missing)) if rails or missing else 0.0
    out = []
    for port in sorted(listed) + [f"{d}/?" for d in missing]:
        moved = ports.get(port)
        judged = port in rails or port.endswith("/?")
        line = parse_rate(rates.get(port))
        entry = {"role": role, "port": port, "counter": counter, "bytes": moved, "judged": judged,
                 "share_of_mean": None, "rate_GB_s": None, "line_rate_GB_s": None if line is None else line / 8,
                 "note": None}
        if moved is not None and window_s and window_s > 0:
            entry["rate_GB_s"] = moved / window_s / GB
        if not judged:
            entry["note"] = ("not named in ib_devices.json for the GPUs in use: listed, not judged"
                             if named is not None else "no ib_devices.json in the run: listed, not judged")
        elif port.endswith("/?"):
            entry["note"] = "named in ib_devices.json, but no port of it was in the readings"
            entry["share_of_mean"] = 0.0 if mean > 0 else None
        elif moved is None:
            entry["note"] = "no bytes counted for this port (not ACTIVE, or its counters unreadable: see the node's problem)"
        elif mean > 0:
            entry["share_of_mean"] = moved / mean
        else:
            entry["note"] = "no rail of the node moved a byte"
        out.append(entry)
    return out
