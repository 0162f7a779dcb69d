"""Fixture runs for the per-rail witness: a built run (runbuilder) whose counter records are re-split over
the ports as given, in the kernel's format (port_xmit_data / port_rcv_data in 4-byte words, 64-bit extended
counters), plus the GPU-to-NIC map (ib_devices.json) the servers would have been started with.

The total each node moved is the one runbuilder's sysfs trees counted (the model's KV plus headers); only its
spread over the ports changes, so the NIC witness on the totals passes and any failure is the rails'.
"""

from __future__ import annotations

import json
from pathlib import Path

from runbuilder import build_run, sweep_provenance

from pdrepro.rundir import RunDir
from pdrepro.scenario.model import Scenario

DIRECTION = {"prefill": "port_xmit_data", "decode": "port_rcv_data"}
RATE = "400 Gb/sec (4X NDR)"


def fixture_run(root: Path, scenario: Scenario) -> RunDir:
    return build_run(root, scenario, provenance=sweep_provenance(scenario), rail_map=False)


def write_map(run: RunDir, gpu_to_devices: dict[int, str]) -> None:
    (run.root / "ib_devices.json").write_text(json.dumps({str(g): d for g, d in gpu_to_devices.items()}))


def _port(words: int) -> dict:
    return {"state": "ACTIVE", "rate": RATE, "extended": True, "port_xmit_data": words, "port_rcv_data": words,
            "hw_counters": {}}


def resplit(run: RunDir, split: dict[str, float], *, roles: tuple[str, ...] = ("prefill", "decode"),
            unnamed: dict[str, int] | None = None, rate_GB_s: float | None = None) -> None:
    """Rewrite every length's counters so each role's KV bytes cross the ports of split (port -> fraction of
    the node's total) and nothing else; unnamed: further ports (storage) with their own bytes. Ports absent
    from split and unnamed are dropped from the readings. rate_GB_s: the node's total rate over the window
    between the readings (the window is set to match), decimal GB/s."""
    start = 123_456_789_012
    for L in run.bench_lengths():
        path = run.counters_file(L)
        record = json.loads(path.read_text())
        for role in list(record["nodes"]):
            node = record["nodes"][role]
            if role not in roles:
                del record["nodes"][role]
                continue
            counter = DIRECTION[role]
            before, after = node["before"], node["after"]
            total = sum(after["ports"][p][counter] - before["ports"][p][counter] for p in before["ports"]) * 4
            if rate_GB_s is not None:
                after["at"] = before["at"] + total / (rate_GB_s * 1e9)
            moved = {p: int(total * f) for p, f in split.items()} | dict(unnamed or {})
            before["ports"] = {p: _port(start) for p in moved}
            after["ports"] = {p: _port(start) | {counter: start + b // 4} for p, b in moved.items()}
            node["rdma_devices"] = sorted({p.split("/")[0] for p in moved})
        path.write_text(json.dumps(record))
