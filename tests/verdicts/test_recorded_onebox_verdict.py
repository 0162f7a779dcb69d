"""The real one-GPU run (tests/recorded/h200-onebox-sglang-0.5.15.post1/, see its SOURCE) judged by
`pdrepro check` and the gates under both transport policies: on a box without RDMA the one-box
scenario's `transport: any` turns the NIC witness and the transport into N/A, the published
`rdma` policy still fails them, and a box where the sweep saw RDMA devices is held to the witness."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from recordedrun import copy_run

from pdrepro.cli import main
from pdrepro.kinds.registry import load_or_analyze
from pdrepro.rundir import RunDir
from pdrepro.scenario.model import load_scenario
from pdrepro.verdicts.gates import NOT_APPLICABLE, evaluate, failed, not_applicable

REPO = Path(__file__).resolve().parents[2]
LENGTHS = (128, 1024, 4096, 16384)


def _judge(run: Path, scenario):
    summary = load_or_analyze(RunDir(run), scenario)
    return summary, evaluate(summary, scenario)


def test_the_logs_show_tcp_and_the_sweep_recorded_no_rdma_device(tmp_path):
    summary, _ = _judge(copy_run(tmp_path), load_scenario("onebox-qwen25-0.5b"))
    assert summary["transport"] == "tcp"
    evidence = summary["transport_evidence"]
    assert set(evidence["servers"]) == {"prefill", "decode"}
    assert all("'MC_FORCE_TCP is set' x1" in line and "TCP transport listening x1" in line
               for line in evidence["servers"].values())
    # The proof was skipped (--no-transport-proof): the logs are read all the same.
    assert evidence["proof"] == {"proven": False, "skipped": True}
    devices = evidence["rdma_devices"]
    assert devices["found"] is False and devices["devices"] == {"decode": [], "prefill": []}
    assert any("provenance.json host.nics of vm" in e for e in devices["evidence"])


def test_transport_any_passes_with_the_witness_not_applicable(tmp_path, capsys):
    run = copy_run(tmp_path)
    _, results = _judge(run, load_scenario("onebox-qwen25-0.5b"))
    assert failed(results) == []
    idle = not_applicable(results)
    assert sorted((r.name, r.prompt_len) for r in idle) == sorted(
        [("nic_witness", L) for L in LENGTHS] + [("transport", None)])
    assert all(NOT_APPLICABLE in r.detail and not r.passed and r.verdict == "N/A" for r in idle)

    assert main(["check", str(run), "--scenario", "onebox-qwen25-0.5b"]) == 0
    out, err = capsys.readouterr()
    assert re.search(r"^\d+ passed, 0 failed, 5 not applicable$", out, re.M)
    assert f"N/A  length 4096: {NOT_APPLICABLE}" in out
    assert any(l.split()[:2] == ["nic_witness", "128"] and l.split()[-1] == "N/A" for l in out.splitlines())


def test_the_same_run_under_rdma_fails_transport_witness_and_pins(tmp_path, capsys):
    run = copy_run(tmp_path)
    # The run's own scenario.yaml predates the key: it reads as rdma, the published policy.
    scenario = load_scenario(run / "scenario.yaml")
    assert scenario.transport == "rdma"
    _, results = _judge(run, scenario)
    # The published policy also gates the pins: the run served release wheels, not the pinned builds.
    assert sorted((r.name, r.prompt_len) for r in failed(results)) == sorted(
        [("nic_witness", L) for L in LENGTHS] + [("transport", None), ("pins_match", None)])
    assert not not_applicable(results)
    assert main(["check", str(run)]) == 1
    assert re.search(r"^\d+ passed, 6 failed$", capsys.readouterr().out, re.M)


def test_rdma_devices_found_but_tcp_used_under_any_fails_the_witness(tmp_path):
    run = copy_run(tmp_path)
    prov = json.loads((run / "provenance.json").read_text())
    prov["host"]["nics"] = {"mlx5_0": {"fw_ver": "28.39.1002", "board_id": "MT_0000000838", "ports": {}}}
    (run / "provenance.json").write_text(json.dumps(prov))
    summary, results = _judge(run, load_scenario("onebox-qwen25-0.5b"))
    assert summary["transport_evidence"]["rdma_devices"]["found"] is True
    assert not not_applicable(results)
    assert sorted((r.name, r.prompt_len) for r in failed(results)) == [("nic_witness", L) for L in LENGTHS]
    transport = next(r for r in results if r.name == "transport")
    assert transport.passed and "found RDMA devices on the nodes (decode ['mlx5_0']" in transport.detail


def test_a_node_nobody_looked_at_is_not_taken_for_one_without_rdma(tmp_path):
    run = copy_run(tmp_path)
    prov = json.loads((run / "provenance.json").read_text())
    prov["endpoints"]["prefill"] = "http://10.0.0.7:30000"  # another node, and its counters were not read
    (run / "provenance.json").write_text(json.dumps(prov))
    summary, results = _judge(run, load_scenario("onebox-qwen25-0.5b"))
    assert summary["transport_evidence"]["rdma_devices"]["found"] is None
    assert "prefill: no record of its RDMA devices" in summary["transport_evidence"]["rdma_devices"]["evidence"]
    assert [r.name for r in failed(results)] == ["nic_witness"] * 4


def test_a_server_at_one_of_the_sweep_hosts_own_addresses_is_on_that_host(tmp_path):
    run = copy_run(tmp_path)
    prov = json.loads((run / "provenance.json").read_text())
    prov["endpoints"]["prefill"] = "http://10.0.0.7:30000"  # the box's own address, as --prefill-ip gives it
    prov["host"]["addresses"] = ["10.0.0.7", "127.0.0.1"]   # what the sweep now records of its host
    (run / "provenance.json").write_text(json.dumps(prov))
    summary, results = _judge(run, load_scenario("onebox-qwen25-0.5b"))
    assert summary["transport_evidence"]["rdma_devices"]["found"] is False
    assert failed(results) == []


def test_the_sweep_records_its_hosts_own_addresses(tmp_path):
    from pdrepro.sweep.provenance import addresses

    assert "127.0.0.1" in addresses() or "::1" in addresses()


def _junit(path: Path) -> dict[str, str]:
    cases = ET.parse(path).getroot().iter("testcase")
    return {c.get("name"): ("failed" if c.find("failure") is not None else "skipped" if c.find("skipped") is not None
                            else "passed") for c in cases}


@pytest.mark.parametrize("policy", ["any", "rdma"])
def test_the_gates_skip_not_applicable_checks_and_never_count_them_passed(tmp_path, policy):
    run = copy_run(tmp_path)
    scenario = ["--scenario", "onebox-qwen25-0.5b"] if policy == "any" else []
    proc = subprocess.run([sys.executable, "-m", "pytest", "repro/", "-p", "no:cacheprovider", "-p", "no:xdist",
                           "--run-dir", str(run), "--junitxml", str(tmp_path / "junit.xml"), *scenario], cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    # The gates write no JUnit file into the run they judge: it goes where pytest is told.
    results = _junit(tmp_path / "junit.xml")
    gated = {f"test_nics_witness_the_kv[L{L}]" for L in LENGTHS} | {"test_transport_proven"}
    if policy == "any":
        assert proc.returncode == 0, proc.stdout[-3000:]
        # The pins gate is skipped too: the one-box scenario's pins_match: warn makes them a warning.
        assert {n for n, v in results.items() if v == "skipped"} == gated | {"test_pins_match"}
        assert "6 skipped" in proc.stdout.splitlines()[-1]
        assert "N/A (skipped, not passed) test_pins_match: pins_match: warn in the scenario" in proc.stdout
        assert f"N/A (skipped, not passed) test_nics_witness_the_kv[L128]: length 128: {NOT_APPLICABLE}" in proc.stdout
    else:
        assert proc.returncode == 1
        assert {n for n, v in results.items() if v == "failed"} == gated | {"test_pins_match"}
        assert "KV transport not checked: the sweep ran with --no-transport-proof" in proc.stdout


def test_the_sweeps_own_device_readings_are_evidence_without_the_host_record(tmp_path):
    """What a sweep of this bundle now records in counters/<L>.json: each reading lists its node's
    RDMA devices (empty: none), so the N/A needs no host record and no loopback address."""
    from pdrepro.sweep.counters import CounterReader, record

    run = copy_run(tmp_path)
    prov = json.loads((run / "provenance.json").read_text())
    del prov["host"]["nics"]
    prov["endpoints"]["prefill"] = "http://10.0.0.7:30000"
    (run / "provenance.json").write_text(json.dumps(prov))
    empty = tmp_path / "sys-class-infiniband"  # a node whose sysfs lists no device
    empty.mkdir()
    reading = CounterReader(empty).read()
    assert reading["decode"]["rdma_devices"] == []
    for L in LENGTHS:
        nodes = {"prefill": dict(reading["decode"], source="prefill node (stand-in)"), "decode": reading["decode"]}
        RunDir(run).write_counters(record(nodes, nodes, L))
    summary, results = _judge(run, load_scenario("onebox-qwen25-0.5b"))
    assert summary["transport_evidence"]["rdma_devices"]["found"] is False
    assert failed(results) == [] and len(not_applicable(results)) == 5

    (empty / "mlx5_0").mkdir()  # the same node with a device: the witness holds again
    reading = CounterReader(empty).read()
    assert reading["decode"]["rdma_devices"] == ["mlx5_0"]
    for L in LENGTHS:
        nodes = {"prefill": reading["decode"], "decode": reading["decode"]}
        RunDir(run).write_counters(record(nodes, nodes, L))
    summary, results = _judge(run, load_scenario("onebox-qwen25-0.5b"))
    assert summary["transport_evidence"]["rdma_devices"]["found"] is True
    assert [r.name for r in failed(results)] == ["nic_witness"] * 4
