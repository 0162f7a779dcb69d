"""Fixture runs for the diagnose tests, each built for one cause: a sweep's run of the H20 scenario (runbuilder),
its counters re-split over the rails (railbuilder), Mooncake's start-up lines in the upstream glog format
(fakecluster.mooncake_startup) put into the servers' logs after their first line, and the nodes' records
RUN/nodes/<role>.json written as `doctor --out` writes them (its record model) from a kernel-shaped sysfs tree
(sysfs_builder)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from fakecluster import _glog, mooncake_startup
from railbuilder import fixture_run, resplit, write_map
from sysfs_builder import h20_node

from pdrepro.fabric import doctor, noderecord, software
from pdrepro.fabric.checks.ordering import KNOB
from pdrepro.rundir import RunDir
from pdrepro.rundir.noderecord import record_path
from pdrepro.scenario.model import load_scenario

SCENARIO = load_scenario("h20-qwen3-235b-1p1d")  # TP 8 on each side, 4 x 400 Gb/s per node
FOUR = [f"mlx5_{i}/1" for i in range(4)]
TWO_GPUS_A_NIC = {g: f"mlx5_{g // 2}" for g in range(8)}
RELAXED_OFF = "[RDMA] Relaxed ordering disabled via MC_IB_PCI_RELAXED_ORDERING=0"


def base_run(root: Path) -> RunDir:
    run = fixture_run(root, SCENARIO)
    write_map(run, TWO_GPUS_A_NIC)
    return run


def copy_of(base: RunDir, dest: Path) -> RunDir:
    shutil.copytree(base.root, dest)
    return RunDir(dest)


def split(run: RunDir, shares: tuple[float, ...]) -> None:
    resplit(run, dict(zip(FOUR, shares)))


def startup(run: RunDir, transport: str, extra: list[str] = ()) -> None:
    """Each server log with the transfer engine's start-up lines of ``transport`` after its first line (the start)."""
    for role in ("prefill", "decode"):
        path = run.role_log(role)
        lines = path.read_text().splitlines()
        added = mooncake_startup(transport) + [_glog("rdma_context.cpp:118", text) for text in extra]
        path.write_text("\n".join(lines[:1] + added + lines[1:]) + "\n")


def node_records(run: RunDir, tmp: Path, knob: str | None = "1", **node: dict) -> None:
    """RUN/nodes/<role>.json for each role given: the record `pdrepro doctor --role ROLE --out FILE` writes (the
    same gather, checks and record builder) for an H20 node built with the role's options (sysfs_builder.h20_node,
    whose ``relaxed`` writes each NIC's PCIe config space), its servers given MC_IB_PCI_RELAXED_ORDERING=``knob``
    (None: unset)."""
    (run.root / "nodes").mkdir(exist_ok=True)
    for role, options in node.items():
        record_path(run.root, role).write_text(node_record(tmp / f"sys-{role}", role, knob, **options))


def node_record(tree: Path, role: str, knob: str | None = "1", **options) -> str:
    """The JSON of the record `doctor --role ROLE --out` writes for an H20 node built at ``tree`` with ``options``."""
    h20_node(tree, **options)
    ctx = doctor.Context(sysfs_root=tree, role=role, dev_dir=None, env={} if knob is None else {KNOB: knob})
    facts = doctor.gather(ctx)
    checks, rate = doctor.run_checks(ctx, facts)
    return noderecord.build(ctx, facts, checks, rate, software.unknown()).model_dump_json(indent=2)


def engine_alone(run: RunDir, GB_s: float) -> None:
    """RUN/engine-ceiling.json as the recorded H200 run's script writes it: each length's KV of one request moved
    by the engine alone at ``GB_s`` (decimal GB/s), as one block."""
    entries = {}
    for L in run.bench_lengths():
        nbytes = SCENARIO.kv_bytes(L)
        ms = nbytes / (GB_s * 1e9) * 1000
        entries[f"{L}/one"] = {"bytes": nbytes, "median_ms": ms, "min_ms": ms * 0.98, "max_ms": ms * 1.05,
                               "GB_s": GB_s}
    (run.root / "engine-ceiling.json").write_text(json.dumps(entries, indent=2))


def slow_queue(run: RunDir, times_forward: float) -> None:
    """Each prefill request line's queue_duration set to ``times_forward`` times its forward_duration."""
    import re

    path = run.role_log("prefill")
    pattern = re.compile(r"queue_duration=[\d.]+ms, forward_duration=(?P<fwd>[\d.]+)ms")
    text = pattern.sub(lambda m: f"queue_duration={float(m['fwd']) * times_forward:.2f}ms, "
                                 f"forward_duration={m['fwd']}ms", path.read_text())
    path.write_text(text)


def overlapping(run: RunDir, together: int, slower: float) -> None:
    """The prefill's client requests in groups of ``together`` that entered the server at once (each line's
    entry_time set to its group's first), each transfer ``slower`` times slower (transfer_speed divided, the
    forward_duration, which ends when the KV has arrived, lengthened by the added time): transfers that shared the
    path, in the upstream line format. Health checks and the server's warm-up (room 0) are left as they are."""
    import re

    from pdrepro.core.units import GiB, MiB

    path = run.role_log("prefill")
    pattern = re.compile(r"input_len=(?P<n>\d+).*forward_duration=(?P<fwd>[\d.]+)ms, entry_time=(?P<entry>[\d.]+), "
                         r"transfer_speed=(?P<speed>[\d.]+) GB/s, transfer_total=(?P<mib>[\d.]+) MB")
    out, group = [], {"n": None, "entry": None, "count": 0}
    for text in path.read_text().splitlines():
        m = pattern.search(text)
        if m is None or "bootstrap_room=0," in text or "HEALTH_CHECK" in text:
            out.append(text)
            continue
        if group["n"] != m["n"] or group["count"] == together:
            group.update(n=m["n"], entry=m["entry"], count=0)
        group["count"] += 1
        speed = float(m["speed"]) / slower
        added_ms = float(m["mib"]) * MiB / GiB * (1 / speed - 1 / float(m["speed"])) * 1000
        text = (text[:m.start("fwd")] + f"{float(m['fwd']) + added_ms:.2f}" + text[m.end("fwd"):m.start("entry")]
                + f"{group['entry']}" + text[m.end("entry"):m.start("speed")] + f"{speed:.2f}" + text[m.end("speed"):])
        out.append(text)
    path.write_text("\n".join(out) + "\n")
