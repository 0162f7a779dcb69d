"""`pdrepro doctor --out` and `--pair`: records written on two fake nodes (kernel-shaped sysfs trees, real
files), held against each other. Each fact the two ends must share is bent on one side and must be refused
with both values; a value one side does not know is listed as not compared and refuses nothing; an unreadable
or malformed record is one line and exit 2."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from depth import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sysfs_builder import h20_node

from pdrepro.cli import main
from pdrepro.rundir import noderecord

SCENARIO = "h20-qwen3-235b-1p1d"
SOFTWARE = {"launcher": "host", "read_from": "python fixture", "image": None, "image_digest": None,
            "sglang_version": "0.5.15.post1", "mooncake_version": "0.3.12.post1",
            "mooncake_distribution": "mooncake-transfer-engine-cuda13", "torch_version": "2.11.0+cu130",
            "wheel_flavour": "cu13"}


def _record(tmp_path: Path, role: str, capsys, env: dict | None = None, software: dict | None = None,
            **node) -> Path:
    """A real record: doctor --out on a fake node; the software facts (which need the servers' Python) laid in."""
    root = tmp_path / f"{role}-sys"
    h20_node(root, **node)
    out = tmp_path / f"{role}.json"
    old = {k: os.environ.get(k) for k in (env or {})}
    os.environ.update(env or {})
    try:
        main(["doctor", "--sysfs-root", str(root), "--role", role, "--out", str(out)])
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    if capsys is not None:
        capsys.readouterr()
    data = json.loads(out.read_text())
    data["software"] = {**SOFTWARE, **(software or {})} if software is not False else data["software"]
    out.write_text(json.dumps(data))
    return out


def _pair(p: Path, d: Path, capsys, *extra: str) -> tuple[int, str, str]:
    rc = main(["doctor", "--pair", str(p), str(d), *extra])
    got = capsys.readouterr()
    return rc, got.out, got.err


def _mismatches(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith("MISMATCH")]


def test_two_matching_nodes_pass_and_every_fact_is_compared(tmp_path, capsys):
    p, d = _record(tmp_path, "prefill", capsys), _record(tmp_path, "decode", capsys)
    rc, out, _ = _pair(p, d, capsys, "--scenario", SCENARIO)
    assert rc == 0, out
    assert _mismatches(out) == [] and "not compared" not in out.split("\n\npair check")[0]
    for fact in ("SGLang version", "wheel flavour", "active MTU: 4096", "GID type", "relaxed ordering (PCIe path): on",
                 "peer memory", "page size", "KV layout", "TP: 8"):
        assert f"same {fact}" in out
    assert "0 mismatch(es), 0 not compared" in out


@pytest.mark.parametrize(("decode_node", "env", "software", "fact", "values"), [
    ({"mtu": 1500}, None, None, "active MTU", "prefill 4096, decode 1024"),
    ({"gid_mode": "v1-only"}, None, None, "GID type", "prefill roce_v2, decode roce_v1"),
    ({"relaxed": False}, None, None, "relaxed ordering (PCIe path)", "prefill on, decode off (mlx5_0"),
    ({"peermem": False}, None, None, "peer memory", "prefill nvidia_peermem loaded, decode nvidia_peermem not loaded"),
    ({}, {"MC_IB_PCI_RELAXED_ORDERING": "1"}, None, "MC_IB_PCI_RELAXED_ORDERING", "prefill unset (0, off), decode 1"),
    ({}, None, {"sglang_version": "0.5.14"}, "SGLang version", "prefill 0.5.15.post1, decode 0.5.14"),
    ({}, None, {"mooncake_version": "0.3.11.post1"}, "Mooncake version", "decode 0.3.11.post1"),
    ({}, None, {"wheel_flavour": "cu12"}, "wheel flavour", "prefill cu13, decode cu12"),
    ({}, None, {"launcher": "compose"}, "launcher", "prefill host, decode compose"),
])
def test_each_disagreement_is_refused_with_both_values(tmp_path, capsys, decode_node, env, software, fact, values):
    p = _record(tmp_path, "prefill", capsys)
    d = _record(tmp_path, "decode", capsys, env=env, software=software, **decode_node)
    rc, out, _ = _pair(p, d, capsys)
    lines = [line for line in _mismatches(out) if line.startswith(f"MISMATCH {fact}:")]
    assert rc == 1 and len(lines) == 1, out
    assert values in lines[0] and "; fix: " in lines[0]
    assert "the launch is refused" in out


def test_images_of_two_builds_are_refused_under_compose(tmp_path, capsys):
    compose = {"launcher": "compose", "image": "pdrepro-gpu:0.1.0", "image_digest": "sha256:" + "a" * 64}
    p = _record(tmp_path, "prefill", capsys, software=compose)
    d = _record(tmp_path, "decode", capsys, software={**compose, "image_digest": "sha256:" + "b" * 64})
    rc, out, _ = _pair(p, d, capsys)
    (line,) = _mismatches(out)
    assert rc == 1 and line.startswith("MISMATCH image digest: prefill sha256:aaa")


def test_a_fact_one_side_does_not_know_is_listed_and_refuses_nothing(tmp_path, capsys):
    p = _record(tmp_path, "prefill", capsys)
    # The decode node's servers' packages were not read, and its NICs' config space not readable (no root).
    d = _record(tmp_path, "decode", capsys, software=False)
    data = json.loads(d.read_text())
    for nic in data["nics"]:
        nic["relaxed_ordering"] = None
    d.write_text(json.dumps(data))
    rc, out, _ = _pair(p, d, capsys)
    assert rc == 0, out
    assert "not compared SGLang version: prefill 0.5.15.post1, decode unknown" in out
    assert "not compared relaxed ordering (PCIe path): prefill on, decode unknown" in out


def test_launch_facts_from_a_rendered_launch(tmp_path, capsys):
    p, d = _record(tmp_path, "prefill", capsys), _record(tmp_path, "decode", capsys)
    deploy = tmp_path / "deploy"
    assert main(["render", "--scenario", SCENARIO, "--target", "compose", "--prefill-ip", "192.0.2.10",
                 "--decode-ip", "192.0.2.20", "--out", str(deploy)]) == 0
    rc, out, _ = _pair(p, d, capsys, "--deploy", str(deploy))
    assert rc == 0 and "same TP: 8" in out and f"rendered launch {deploy}" in out
    # The decode server's page size changed by hand in its compose file (and its listing): refused.
    for name in ("decode.yaml", "commands.txt"):
        path = deploy / name
        text = path.read_text()
        marker = '"--disaggregation-mode", "decode"' if name == "decode.yaml" else "--disaggregation-mode decode"
        bent = '"--page-size", "16", ' + marker if name == "decode.yaml" else "--page-size 16 " + marker
        path.write_text(text.replace(marker, bent))
    rc, out, _ = _pair(p, d, capsys, "--deploy", str(deploy))
    assert rc == 1 and "MISMATCH page size: prefill default, decode 16" in out


def test_scenario_and_deploy_are_one_or_the_other(tmp_path, capsys):
    p, d = _record(tmp_path, "prefill", capsys), _record(tmp_path, "decode", capsys)
    rc, _, err = _pair(p, d, capsys, "--scenario", SCENARIO, "--deploy", str(tmp_path))
    assert rc == 2 and "give one" in err


@pytest.mark.parametrize(("content", "expect"), [
    (b"{not json", "not JSON"),
    (b'{"format": "pdrepro-node-record/1"}', "missing key"),
    (b"\x1f\x8b\x08\x00", "gzip"),
    (b'{"format": "other/9"}', "format"),
])
def test_a_malformed_record_is_one_line_and_exit_2(tmp_path, capsys, content, expect):
    p = _record(tmp_path, "prefill", capsys)
    bad = tmp_path / "bad.json"
    bad.write_bytes(content)
    rc, out, err = _pair(p, bad, capsys)
    assert rc == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and str(bad) in err and expect in err


def test_a_missing_fifo_or_swapped_record_is_exit_2(tmp_path, capsys):
    p, d = _record(tmp_path, "prefill", capsys), _record(tmp_path, "decode", capsys)
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    for args, expect in (((p, tmp_path / "none.json"), "no such node record"), ((p, fifo), "FIFO"),
                         ((d, p), "is the decode node's record, given as the prefill node's")):
        rc, _, err = _pair(*args, capsys)
        assert rc == 2 and expect in err and "Traceback" not in err


def test_out_never_writes_through_a_link(tmp_path, capsys):
    h20_node(tmp_path / "sys")
    target = tmp_path / "elsewhere.txt"
    target.write_text("keep")
    link = tmp_path / "record.json"
    link.symlink_to(target)
    rc = main(["doctor", "--sysfs-root", str(tmp_path / "sys"), "--out", str(link)])
    assert rc == 2 and "symlink" in capsys.readouterr().err
    assert target.read_text() == "keep" and link.is_symlink()


def test_the_record_is_written_whatever_the_verdict_and_reads_back(tmp_path, capsys):
    h20_node(tmp_path / "sys", down=("mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"))
    out = tmp_path / "r.json"
    assert main(["doctor", "--sysfs-root", str(tmp_path / "sys"), "--role", "decode", "--out", str(out)]) == 1
    record = noderecord.read(out)
    assert record.verdict == "fail" and record.role == "decode"
    assert [n.device for n in record.nics] == ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"]
    assert all(not port.active for n in record.nics for port in n.ports)
    assert noderecord.record_path(tmp_path / "run", "decode") == tmp_path / "run" / "nodes" / "decode.json"


_LEAF = st.one_of(st.none(), st.booleans(), st.integers(-5, 70000), st.text(max_size=12),
                  st.lists(st.integers(0, 9), max_size=2))


@pytest.fixture(scope="module")
def valid_pair(tmp_path_factory):
    base = tmp_path_factory.mktemp("pair")
    return _record(base, "prefill", None), _record(base, "decode", None)


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_hostile_record_never_passes_silently_or_crashes(tmp_path, valid_pair, capsys, data):
    # A valid pair, then one field of the decode record bent to any JSON value: exit 0, 1 or 2, never a traceback,
    # and a record the model refuses is exit 2 naming the file.
    p = valid_pair[0]
    d = tmp_path / "decode-bent.json"
    record = json.loads(valid_pair[1].read_text())
    key = data.draw(st.sampled_from(sorted(record)))
    record[key] = data.draw(_LEAF)
    d.write_text(json.dumps(record))
    rc, _, err = _pair(p, d, capsys)
    assert rc in (0, 1, 2) and "Traceback" not in err
    if rc == 2:
        assert str(d) in err


def test_a_deploy_folder_that_holds_no_launch_is_one_line(tmp_path, capsys):
    p, d = _record(tmp_path, "prefill", capsys), _record(tmp_path, "decode", capsys)
    deploy = tmp_path / "not-a-launch"
    deploy.mkdir()
    (deploy / "notes.txt").write_text("python -m sglang.launch_server --disaggregation-mode prefill --tp-size 8\n")
    (deploy / "zero.yaml").symlink_to("/dev/zero")  # a link is never followed into the launch's files
    rc, out, err = _pair(p, d, capsys, "--deploy", str(deploy))
    assert rc == 2 and out == "" and "no decode server's command in it" in err
    rc, _, err = _pair(p, d, capsys, "--deploy", str(tmp_path / "none"))
    assert rc == 2 and "not a folder" in err
