"""RDMA port counters read from kernel-shaped sysfs trees, and the NIC witness built on them."""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from clihelp import assert_one_line_error, pdrepro
from runbuilder import build_run, sweep_provenance
from sysfs_builder import h20_node, rxe_node

from pdrepro.analysis.summarize import compute_summary
from pdrepro.fabric.counters import SNAPSHOT_SCRIPT, parse_snapshot, read_ports
from pdrepro.rundir.counters import LEGACY_MAX, words_moved
from pdrepro.scenario.model import load_scenario
from pdrepro.verdicts.gates import evaluate, failed

SCENARIO = load_scenario("h20-qwen3-235b-1p1d")
RATE = "400 Gb/sec (4X NDR)"


def test_read_ports_gives_words_and_hw_counters(tmp_path):
    fs = h20_node(tmp_path)
    fs.traffic("mlx5_1", sent=4096, received=400, hw={"out_of_sequence": 2})
    ports = read_ports(tmp_path / "class" / "infiniband")
    assert sorted(ports) == ["mlx5_0/1", "mlx5_1/1", "mlx5_2/1", "mlx5_3/1"]
    p = ports["mlx5_1/1"]
    assert (p["port_xmit_data"], p["port_rcv_data"]) == (1024, 100)  # 4-byte words
    assert p["state"] == "ACTIVE" and p["rate"] == RATE
    assert p["hw_counters"]["out_of_sequence"] == 2 and p["hw_counters"]["rx_write_requests"] == 0


def test_soft_roce_has_no_data_counters(tmp_path):
    rxe_node(tmp_path)
    ports = read_ports(tmp_path / "class" / "infiniband")
    assert "port_xmit_data" not in ports["rxe0/1"] and "sent_pkts" in ports["rxe0/1"]["hw_counters"]


def test_the_script_for_other_nodes_reads_what_read_ports_reads(tmp_path):
    fs = h20_node(tmp_path, down=("mlx5_2",))
    fs.traffic("mlx5_0", sent=8 * 2**30, received=12)
    ib = tmp_path / "class" / "infiniband"
    out = subprocess.run(["sh", "-c", SNAPSHOT_SCRIPT], capture_output=True, text=True, check=True,
                         env={**os.environ, "IB_ROOT": str(ib)}).stdout
    assert parse_snapshot(out) == read_ports(ib)
    assert parse_snapshot(out)["mlx5_2/1"]["state"] == "DOWN"
    # A port without hw_counters (the last one read) still ends the script with status 0.
    import shutil

    shutil.rmtree(ib / "mlx5_3" / "ports" / "1" / "hw_counters")
    proc = subprocess.run(["sh", "-c", SNAPSHOT_SCRIPT], capture_output=True, text=True,
                          env={**os.environ, "IB_ROOT": str(ib)})
    assert proc.returncode == 0 and parse_snapshot(proc.stdout) == read_ports(ib)


def test_counter_differences():
    assert words_moved(10, 25, 60.0, RATE, extended=True) == (15, None)
    assert words_moved(2**40, 2**40 + 15, 60.0, RATE) == (15, None)  # past 32 bits: 64 wide
    words, why = words_moved(2**40, 7, 1.0, RATE)
    assert words is None and "reset" in why
    # Maybe 32 bits wide. At 400 Gb/s 2^32 words take 0.34 s: within 0.1 s at most one wrap.
    assert words_moved(LEGACY_MAX - 9, 5, 0.1, RATE) == (15, None)
    assert words_moved(10, 25, 0.1, RATE) == (15, None)
    words, why = words_moved(LEGACY_MAX - 9, 5, 60.0, RATE)
    assert words is None and "may have wrapped, possibly more than once" in why
    words, why = words_moved(10, 25, 60.0, RATE)  # moved forward, yet it may have gone round
    assert words is None and "32-bit" in why
    words, why = words_moved(100, LEGACY_MAX, 0.1, RATE)
    assert words is None and "saturated" in why


def test_legacy_counters_have_no_unicast_packet_counters(tmp_path):
    h20_node(tmp_path / "new")
    h20_node(tmp_path / "old", extended_counters=False)
    assert read_ports(tmp_path / "new" / "class" / "infiniband")["mlx5_0/1"]["extended"] is True
    assert "extended" not in read_ports(tmp_path / "old" / "class" / "infiniband")["mlx5_0/1"]


def _checks(tmp_path, **kw):
    kw.setdefault("provenance", sweep_provenance(SCENARIO))
    summary = compute_summary(build_run(tmp_path / "r", SCENARIO, **kw), SCENARIO)
    return summary, evaluate(summary, SCENARIO)


def test_published_run_is_witnessed_by_both_nodes(tmp_path):
    summary, results = _checks(tmp_path)
    assert failed(results) == []
    witness = [r for r in results if r.name == "nic_witness"]
    assert len(witness) == 9 and all(100 <= r.figure < 105 for r in witness)
    assert len([r for r in results if r.name == "nic_within_line_rate"]) == 9
    row = summary["rows"][-1]
    assert row["nic_nodes"]["prefill"]["counter"] == "port_xmit_data"
    assert row["nic_nodes"]["decode"]["counter"] == "port_rcv_data"
    assert summary["witness"]["min_kv_share_pct"] == 90.0 and "control_bytes_per_request" in summary["witness"]


def test_kv_missing_from_the_nics_fails_that_length_by_name(tmp_path):
    _, results = _checks(tmp_path, nic_share={8192: 0.02})
    bad = failed(results)
    assert [(r.name, r.prompt_len) for r in bad] == [("nic_witness", 8192)]
    assert bad[0].figure == pytest.approx(2.0, rel=0.05) and "% of KV" in bad[0].unit


def test_decode_node_alone_still_witnesses(tmp_path):
    _, results = _checks(tmp_path, counter_roles=("decode",))
    assert failed(results) == []


def test_run_without_counters_fails_not_measured(tmp_path):
    summary, results = _checks(tmp_path, counters=False)
    bad = failed(results)
    assert {r.name for r in bad} == {"nic_witness"} and len(bad) == 9
    assert "not measured" in bad[0].detail and "counters/128.json" in bad[0].detail
    assert not [i for i in summary["issues"] if i["severity"] == "error"]  # a failed check, not bad input


def test_legacy_32bit_counters_that_wrap(tmp_path):
    # The counters start just below 2^32 words. Windows of 0.2 s: no port can move 2^32 words
    # (16 GiB) in that time, so a counter that ran backwards wrapped exactly once.
    short = {L: 0.2 for L in SCENARIO.sweep.prompt_lens if L <= 1024}
    _, results = _checks(tmp_path, counter_width=32, nic_window_s=short)
    witness = {r.prompt_len: r for r in results if r.name == "nic_witness"}
    assert all(witness[L].passed and 100 <= witness[L].figure < 105 for L in short)
    # A real length's window of seconds: the port could have wrapped many times; not a measurement.
    assert not witness[32768].passed and "may have wrapped" in witness[32768].detail


def test_counts_above_the_line_rate_fail(tmp_path):
    _, results = _checks(tmp_path, nic_window_s={32768: 0.5})
    bad = failed(results)
    # The node above its 200 GB/s, and each of its rails (a quarter of it each) above its own 50 GB/s.
    assert {(r.name, r.prompt_len) for r in bad} == {("nic_within_line_rate", 32768), ("rail_within_line_rate", 32768)}
    node = next(r for r in bad if r.name == "nic_within_line_rate")
    assert node.figure > 200 and node.bound == 200.0
    assert len([r for r in bad if r.name == "rail_within_line_rate"]) == 8


def test_extra_traffic_and_retries_are_noted(tmp_path):
    summary, results = _checks(tmp_path, nic_share={1024: 3.0}, nic_hw={"out_of_sequence": 4})
    assert failed(results) == []
    kinds = {(i["kind"], i["prompt_len"]) for i in summary["issues"]}
    assert ("nic_extra_traffic", 1024) in kinds
    assert ("nic_trouble", 128) in kinds


def test_unreadable_counter_record_is_bad_input(tmp_path):
    run = build_run(tmp_path / "r", SCENARIO, provenance=sweep_provenance(SCENARIO))
    run.counters_file(512).write_text('{"prompt_len": 512, "nodes": ')
    result = pdrepro("check", run.root)
    assert_one_line_error(result, "check", "counters/512.json")
    assert any(l.startswith("nic_witness") and "512" in l and l.endswith("FAIL") for l in result.out.splitlines())


def test_a_port_without_a_performance_agent_has_no_data_counters(tmp_path):
    # What the kernel prints when the device answers no PMA query (iWARP devices, e.g. i40iw).
    fs = h20_node(tmp_path)
    for counter in ("port_xmit_data", "port_rcv_data"):
        fs.set_counter("mlx5_0", counter, "N/A (no PMA)")
    ports = read_ports(tmp_path / "class" / "infiniband")
    assert "port_xmit_data" not in ports["mlx5_0/1"] and ports["mlx5_1/1"]["port_xmit_data"] == 0


@pytest.mark.parametrize("damage", ["words", "time", "ports"])
def test_a_mangled_counter_record_is_bad_input(tmp_path, damage):
    run = build_run(tmp_path / "r", SCENARIO, provenance=sweep_provenance(SCENARIO))
    record = json.loads(run.counters_file(256).read_text())
    after = record["nodes"]["decode"]["after"]
    if damage == "words":
        after["ports"]["mlx5_0/1"]["port_rcv_data"] = "lots"
    elif damage == "time":
        after["at"] = "NaN"
    else:
        after["ports"] = ["mlx5_0/1"]
    run.counters_file(256).write_text(json.dumps(record))
    result = pdrepro("check", run.root)
    assert_one_line_error(result, "check", "counters/256.json")


def test_with_two_decode_nodes_each_node_carries_half(tmp_path):
    sc2 = load_scenario("h20-qwen3-235b-2p2d")
    run = build_run(tmp_path / "two", sc2, provenance=sweep_provenance(sc2), nic_share={L: 0.5 for L in sc2.sweep.prompt_lens})
    summary = compute_summary(run, sc2)
    witness = [r for r in evaluate(summary, sc2) if r.name == "nic_witness"]
    assert witness and all(r.passed and 100 <= r.figure < 106 for r in witness)
    # The same half on a 1P1D run is half the KV missing.
    _, results = _checks(tmp_path, nic_share={1024: 0.5})
    assert [(r.name, r.prompt_len) for r in failed(results)] == [("nic_witness", 1024)]


def test_the_summary_states_the_floor_the_scenario_set(tmp_path):
    scenario = SCENARIO.with_thresholds(SCENARIO.thresholds.model_copy(update={"min_nic_kv_share_pct": 80.0}))
    summary = compute_summary(build_run(tmp_path / "r", scenario, provenance=sweep_provenance(scenario)), scenario)
    assert summary["witness"]["min_kv_share_pct"] == 80.0


# Issue 15, 6: a record is checked for what it is, naming the file and the port.

def test_a_record_of_another_length_is_bad_input(tmp_path):
    run = build_run(tmp_path / "r", SCENARIO, provenance=sweep_provenance(SCENARIO))
    record = json.loads(run.counters_file(1024).read_text())
    record["prompt_len"] = 2048
    run.counters_file(1024).write_text(json.dumps(record))
    error = assert_one_line_error(pdrepro("check", run.root), "check", "counters/1024.json", "2048")
    assert "1024" in error


def test_negative_counter_values_are_bad_input(tmp_path):
    run = build_run(tmp_path / "r", SCENARIO, provenance=sweep_provenance(SCENARIO))
    record = json.loads(run.counters_file(4096).read_text())
    record["nodes"]["prefill"]["before"]["ports"]["mlx5_2/1"]["port_xmit_data"] = -5
    run.counters_file(4096).write_text(json.dumps(record))
    assert_one_line_error(pdrepro("check", run.root), "check", "counters/4096.json", "mlx5_2/1", "negative")


def test_a_64bit_counter_that_ran_backwards_is_bad_input(tmp_path):
    run = build_run(tmp_path / "r", SCENARIO, provenance=sweep_provenance(SCENARIO))
    record = json.loads(run.counters_file(8192).read_text())
    port = record["nodes"]["decode"]["after"]["ports"]["mlx5_1/1"]
    port["port_rcv_data"] = record["nodes"]["decode"]["before"]["ports"]["mlx5_1/1"]["port_rcv_data"] - 10
    run.counters_file(8192).write_text(json.dumps(record))
    assert_one_line_error(pdrepro("check", run.root), "check", "counters/8192.json", "mlx5_1/1", "back")


# Counters of another stretch of time ------------------------------------------------------------------------

def _sweep_state_from_counters(run, shift: dict[int, float] | None = None) -> None:
    """sweep-state.json as the sweep writes it: each length stamped (local time, whole seconds) once its after-reading
    is written, with the client's run time; SHIFT moves a length's recorded window (seconds) off its readings."""
    import datetime as dt

    lengths = {}
    for L in run.bench_lengths():
        node = json.loads(run.counters_file(L).read_text())["nodes"]["decode"]
        end = node["after"]["at"] + 0.4 + (shift or {}).get(L, 0.0)
        at = dt.datetime.fromtimestamp(end, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S%z")
        lengths[str(L)] = {"status": "done", "at": at, "seconds": round(node["after"]["at"] - node["before"]["at"], 3)}
    run.sweep_state_file.write_text(json.dumps({"lengths": lengths, "events": []}))


def test_readings_around_the_sweeps_window_witness_the_length(tmp_path):
    run = build_run(tmp_path / "run", SCENARIO, provenance=sweep_provenance(SCENARIO))
    _sweep_state_from_counters(run)
    results = evaluate(compute_summary(run, SCENARIO), SCENARIO)
    witness = [r for r in results if r.name == "nic_witness"]
    assert len(witness) == len(SCENARIO.sweep.prompt_lens) and all(r.passed for r in witness)


def test_readings_a_day_off_the_sweeps_window_are_not_measured(tmp_path):
    run = build_run(tmp_path / "run", SCENARIO, provenance=sweep_provenance(SCENARIO), nic_shift_s={4096: -86400.0})
    _sweep_state_from_counters(run, shift={4096: 86400.0})  # the sweep's window: where the requests really ran
    summary = compute_summary(run, SCENARIO)
    bad = failed(evaluate(summary, SCENARIO))
    assert {(r.name, r.prompt_len) for r in bad} == {("nic_witness", 4096), ("rail_share", 4096)}
    witness = next(r for r in bad if r.name == "nic_witness")
    assert "not measured" in witness.detail and "sweep-state.json" in witness.detail
    # Both days are named, so the reader sees how far off the readings are.
    assert "the decode node's counters were read from 2026-07-14" in witness.detail and "to 2026-07-15" in witness.detail
    assert pdrepro("check", run.root).rc == 1


def test_readings_of_the_right_length_but_no_place_in_time_are_not_measured(tmp_path):
    run = build_run(tmp_path / "run", SCENARIO, provenance=sweep_provenance(SCENARIO))
    # Neither a sweep window nor a time on the request lines: nothing says when the readings were taken.
    for log in run.logs_dir.glob("*.log"):
        log.write_text("".join(line.split("] ", 1)[1] + "\n" if line.startswith("[") else line + "\n"
                               for line in log.read_text().splitlines()))
    summary = compute_summary(run, SCENARIO)
    witness = [r for r in evaluate(summary, SCENARIO) if r.name == "nic_witness"]
    assert witness and not any(r.passed for r in witness)
    assert all("nothing places the readings" in r.detail for r in witness)
