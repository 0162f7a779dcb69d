"""`stack up` records its node once per role, as a cluster launch does (RUN/nodes/prefill.json, decode.json, the
record `pdrepro doctor --role ROLE --out` writes) from a kernel-shaped sysfs tree and nvidia-smi's output, with
each role's own GPUs; `pdrepro diagnose` then reads the node's causes from them. A record step that cannot write
its records says so in one line, and the stack starts all the same."""

from __future__ import annotations

import os
import shutil

import fakebin
from diagnosisbuild import base_run
from diagnosisrun import diagnose_json, names
from stackhelp import env, site, stack, up
from sysfs_builder import h20_node

from pdrepro.rundir import noderecord

__all__ = ["site"]


def _box(site) -> tuple[dict, str]:
    """An H20-shaped sysfs tree and nvidia-smi first on PATH: the environment `stack up` runs with, the tree."""
    tree = site["tmp"] / "sys"
    h20_node(tree)
    bin_dir = site["tmp"] / "bin"
    fakebin.nvidia_smi(bin_dir)
    return env(PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}"), str(tree)


def _record_lines(started) -> list[str]:
    return [line for line in started.stdout.splitlines() if "node record" in line]


def test_stack_up_records_each_role_and_diagnose_reads_them(site, tmp_path):
    env_, tree = _box(site)
    started = up(site, "--gpus", "0,4", "--sysfs-root", tree, env_=env_)
    assert started.returncode == 0, started.stdout + started.stderr
    run = site["run"]
    assert len(_record_lines(started)) == 1 and "nodes/prefill.json" in _record_lines(started)[0]
    records = {role: noderecord.read(noderecord.record_path(run, role)) for role in ("prefill", "decode")}
    assert {role: r.role for role, r in records.items()} == {"prefill": "prefill", "decode": "decode"}
    # A record doctor does not pass is said to be evidence, not a gate; one it passes needs no such word.
    failed = any(r.verdict != "pass" for r in records.values())
    assert ("not a gate" in _record_lines(started)[0]) == failed
    # Each role's record names the GPU its server was given, placed with the NIC under its own switch.
    assert [(g.index, g.nic) for g in records["prefill"].gpus or []] == [(0, "mlx5_0")]
    assert [(g.index, g.nic) for g in records["decode"].gpus or []] == [(4, "mlx5_2")]
    assert all(r.software.launcher == "host" and r.sysfs_root == tree for r in records.values())
    assert stack("status", str(run)).returncode == 0

    built = base_run(tmp_path / "built")
    before = diagnose_json(built.root)
    assert {"mtu", "nic-to-gpu placement"} <= {u.name for u in before.unknown if "no node record" in u.missing}
    shutil.copytree(run / "nodes", built.root / "nodes")
    d = diagnose_json(built.root)
    assert {"mtu", "nic-to-gpu placement"} <= set(names(d.cleared))
    assert [u.name for u in d.unknown if "no node record" in u.missing] == []


def test_a_link_planted_at_nodes_is_refused_and_the_stack_still_starts(site):
    env_, tree = _box(site)
    run, elsewhere = site["run"], site["tmp"] / "elsewhere"
    run.mkdir()
    elsewhere.mkdir()
    (run / "nodes").symlink_to(elsewhere)
    started = up(site, "--sysfs-root", tree, env_=env_)
    assert started.returncode == 0, started.stdout + started.stderr
    [line] = _record_lines(started)
    assert "no node record written" in line and f"{run / 'nodes'}: is a symlink" in line
    assert list(elsewhere.iterdir()) == [] and (run / "nodes").is_symlink()
    assert stack("status", str(run)).returncode == 0


def test_a_hostile_sysfs_loses_the_records_not_the_stack_and_a_second_up_leaves_no_stale_one(site):
    env_, tree = _box(site)
    run = site["run"]
    first = up(site, "--sysfs-root", tree, env_=env_)
    assert first.returncode == 0, first.stdout + first.stderr
    assert noderecord.record_path(run, "decode").is_file()
    assert stack("down", str(run), "--grace", "5").returncode == 0
    # A FIFO where a port's state is read: the reader refuses it, the record step says so, the stack starts.
    state = site["tmp"] / "sys/class/infiniband/mlx5_0/ports/1/state"
    state.unlink()
    os.mkfifo(state)
    second = up(site, "--sysfs-root", tree, env_=env_)
    assert second.returncode == 0, second.stdout + second.stderr
    [line] = _record_lines(second)
    assert "no node record written" in line and "FIFO" in line and "Traceback" not in second.stderr
    # The first start's records are not this one's: none is left to claim it.
    assert not noderecord.record_path(run, "prefill").exists() and not noderecord.record_path(run, "decode").exists()
    assert stack("status", str(run)).returncode == 0


def test_the_records_a_real_stack_up_kept_on_the_h200_read_back_and_pair(tmp_path):
    # Recorded: `stack up` on one H200 without an RDMA device (tests/recorded/h200-onebox-host-nodes-*, its SOURCE)
    # wrote both records. They read back as doctor's record, each names its role, its GPU and the serving packages
    # it found, and the pair check on them passes: nothing disagrees, and what a box without RDMA cannot know (the
    # active MTU, the GID, relaxed ordering on a NIC's path) is listed as not compared, never as a match.
    from pathlib import Path

    from clihelp import pdrepro

    run = Path(__file__).resolve().parents[1] / "recorded" / "h200-onebox-host-nodes-sglang-0.5.15.post1" / "run"
    records = {}
    for role in ("prefill", "decode"):
        record = noderecord.NodeRecord.model_validate_json((run / "nodes" / f"{role}.json").read_text())
        assert record.role == role and [g.name for g in record.gpus] == ["NVIDIA H200"] and record.nics == []
        assert (record.software.launcher, record.software.sglang_version) == ("host", "0.5.15.post1")
        records[role] = record
    paired = pdrepro("doctor", "--pair", run / "nodes" / "prefill.json", run / "nodes" / "decode.json",
                     "--scenario", "onebox-qwen25-0.5b")
    assert paired.rc == 0, paired.out + paired.err
    assert "0 mismatch(es), 4 not compared" in paired.out
    for fact in ("active MTU", "GID type", "GID reachability", "relaxed ordering (PCIe path)"):
        assert f"not compared {fact}: prefill unknown, decode unknown" in paired.out
    assert "same wheel flavour: cu13" in paired.out and "same TP: 1" in paired.out
