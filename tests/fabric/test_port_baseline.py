"""The per-port fabric baseline: `pdrepro baseline` runs ib_write_bw on each NIC pair alone, then on all at
once, and holds each port to 90 % of its own line rate (sysfs's rate) both ways; `pdrepro check`, the gates
and the report name the port that fell short. perftest's tables are fixtures in its exact layout
(tests/fixtures/perftest/), the nodes fake sysfs trees, the tools stand-ins on PATH."""

from __future__ import annotations

import json

import fakebin
import pytest
from clihelp import pdrepro
from railbuilder import fixture_run, resplit, write_map
from sysfs_builder import h20_node

from pdrepro.analysis.summarize import compute_summary
from pdrepro.cli import main
from pdrepro.report.markdown import render_report
from pdrepro.rundir.portbaseline import BaselinePort, judge_port
from pdrepro.rundir.summarymodel import as_summary
from pdrepro.scenario.model import load_scenario
from pdrepro.verdicts.gates import evaluate, failed

PEER = "192.168.100.12"
SCENARIO = load_scenario("h20-qwen3-235b-1p1d")  # 4 x 400 Gb/s per node: 50 GB/s per port
FOUR = [f"mlx5_{i}/1" for i in range(4)]
# ib_write_bw's -p: the four pairs alone take 18515..18518 in turn, all at once 18519..18522.
ALONE = {f"mlx5_{i}": 18515 + i for i in range(4)}
TOGETHER = {f"mlx5_{i}": 18519 + i for i in range(4)}


@pytest.fixture
def node(tmp_path, monkeypatch):
    bin_dir = fakebin.first_on_path(tmp_path / "bin", monkeypatch)
    h20_node(tmp_path / "sys")
    fakebin.transfer_engine_bench(bin_dir)
    return tmp_path, bin_dir


def _baseline(tmp_path, out, *extra):
    return main(["baseline", "--peer", PEER, "--sysfs-root", str(tmp_path / "sys"), "--out", str(out),
                 "--duration", "1", *extra])


def _record(out):
    data = json.loads((out / "baseline.json").read_text())
    return {p["local"]: p for p in data["ib_write_bw"]["ports"]}, data


def test_a_port_at_60_percent_alone_fails_by_name(node, capsys):
    tmp_path, bin_dir = node
    fakebin.ib_write_bw(bin_dir, tables={f"mlx5_1:{ALONE['mlx5_1']}": "ib_write_bw-client-gbits-240.txt"})
    assert _baseline(tmp_path, tmp_path / "run") == 1
    out = capsys.readouterr().out
    fails = [l for l in out.splitlines() if l.startswith("FAIL ")]
    assert fails == ["FAIL port mlx5_1 alone: 30.00 GB/s = 60.0 % of its 50.0 GB/s line rate, short of 90 %"]
    assert "1 port(s) short of 90 % of line rate" in out
    ports, data = _record(tmp_path / "run")
    assert ports["mlx5_1"]["alone"]["bw_average_GB_s"] == 30.0 and ports["mlx5_1"]["line_rate_GB_s"] == 50.0
    assert ports["mlx5_1"]["together"]["bw_average_GB_s"] == pytest.approx(46.176, abs=1e-3)
    # today's aggregate stays next to the ports: the four all at once
    assert data["ib_write_bw"]["aggregate_GB_s"] == pytest.approx(4 * 46.176, abs=0.01)
    assert data["baseline_GB_s"] == 178.64


def test_a_port_fine_alone_but_short_with_all_at_once_fails_by_name(node, capsys):
    tmp_path, bin_dir = node
    fakebin.ib_write_bw(bin_dir, tables={f"mlx5_2:{TOGETHER['mlx5_2']}": "ib_write_bw-client-gbits-300.txt"})
    assert _baseline(tmp_path, tmp_path / "run") == 1
    fails = [l for l in capsys.readouterr().out.splitlines() if l.startswith("FAIL ")]
    assert fails == ["FAIL port mlx5_2 with all ports at once: 37.50 GB/s = 75.0 % of its 50.0 GB/s line rate, "
                     "short of 90 %"]
    ports, data = _record(tmp_path / "run")
    assert ports["mlx5_2"]["alone"]["bw_average_GB_s"] == pytest.approx(46.176, abs=1e-3)
    assert data["ib_write_bw"]["aggregate_GB_s"] == pytest.approx(3 * 46.176 + 37.5, abs=0.01)
    # a lower floor, asked for, lets 75 % pass
    assert _baseline(tmp_path, tmp_path / "run2", "--min-port-fraction", "0.7") == 0


def test_the_floor_is_each_ports_own_line_rate(tmp_path, monkeypatch, capsys):
    # A node with a 400 Gb/s and an 800 Gb/s port: each is held to its own rate, not to the mean or the sum.
    bin_dir = fakebin.first_on_path(tmp_path / "bin", monkeypatch)
    h20_node(tmp_path / "sys", nics=2)
    (tmp_path / "sys" / "class" / "infiniband" / "mlx5_1" / "ports" / "1" / "rate").write_text("800 Gb/sec (4X XDR)\n")
    fakebin.ib_write_bw(bin_dir)
    assert _baseline(tmp_path, tmp_path / "run", "--skip-te") == 1
    fails = [l for l in capsys.readouterr().out.splitlines() if l.startswith("FAIL ")]
    # 46.18 GB/s is 92.4 % of mlx5_0's 50 GB/s, but 46.2 % of mlx5_1's 100 GB/s, alone and all at once
    assert [l.split(":")[0] for l in fails] == ["FAIL port mlx5_1 alone", "FAIL port mlx5_1 with all ports at once"]
    assert all("46.2 % of its 100.0 GB/s line rate" in l for l in fails)


def test_a_port_above_its_line_rate_is_refused_and_kept(node, capsys):
    tmp_path, bin_dir = node
    fakebin.ib_write_bw(bin_dir, tables={f"mlx5_3:{ALONE['mlx5_3']}": "ib_write_bw-client-gbits-450.txt"})
    assert _baseline(tmp_path, tmp_path / "run", "--skip-te") == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert "port mlx5_3 alone: 56.25 GB/s is above its 50.0 GB/s line rate" in err and "baseline.json" in err
    ports, data = _record(tmp_path / "run")
    assert ports["mlx5_3"]["alone"]["bw_average_GB_s"] == 56.25  # what was measured stays, for whoever reads it
    # the aggregate holds an impossible figure: no ceiling from it
    assert data["baseline_GB_s"] is None and "mlx5_3" in data["refused"]


@pytest.mark.parametrize("table, why", [("ib_write_bw-client-gbits-cut.txt", "BW average[Gb/sec]"),
                                        (None, "no output")])
def test_a_cut_or_missing_output_is_one_line_exit_2_and_the_rest_is_kept(node, capsys, table, why):
    tmp_path, bin_dir = node
    if table is None:
        # the tool printed nothing and exited 0 for mlx5_0 all at once
        fakebin.ib_write_bw(bin_dir)
        real = (bin_dir / "ib_write_bw").read_text()
        (bin_dir / "ib_write_bw").write_text(real.replace(
            "case \"$dev:$port\" in\n", f"case \"$dev:$port\" in\n  mlx5_0:{TOGETHER['mlx5_0']}) exit 0;;\n"))
    else:
        fakebin.ib_write_bw(bin_dir, tables={f"mlx5_0:{TOGETHER['mlx5_0']}": table})
    assert _baseline(tmp_path, tmp_path / "run") == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert err.startswith("pdrepro baseline: error: port mlx5_0 with all ports at once: not measured (exit 0: ")
    assert why in err and "baseline.json" in err
    ports, data = _record(tmp_path / "run")
    assert ports["mlx5_0"]["together"]["bw_average_GB_s"] is None
    assert ports["mlx5_0"]["together"]["output"] == "ib_write_bw-together-mlx5_0.txt"
    assert all(ports[f"mlx5_{i}"]["alone"]["bw_average_GB_s"] == pytest.approx(46.176, abs=1e-3) for i in range(4))
    assert data["transfer_engine_bench"]["throughput_GB_s"] == 178.64  # the engine still ran after it
    assert data["ib_write_bw"]["aggregate_GB_s"] is None


@pytest.mark.parametrize("value", ["0", "1.5", "nan", "-0.2"])
def test_a_floor_outside_0_to_1_is_refused(node, capsys, value):
    tmp_path, _ = node
    assert _baseline(tmp_path, tmp_path / "run", f"--min-port-fraction={value}") == 2
    assert "--min-port-fraction" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def test_a_port_without_a_sysfs_rate_is_refused_before_measuring(tmp_path, monkeypatch, capsys):
    bin_dir = fakebin.first_on_path(tmp_path / "bin", monkeypatch)
    h20_node(tmp_path / "sys", nics=1)
    (tmp_path / "sys" / "class" / "infiniband" / "mlx5_0" / "ports" / "1" / "rate").write_text("")
    fakebin.ib_write_bw(bin_dir, log=tmp_path / "ib.log")
    assert _baseline(tmp_path, tmp_path / "run", "--skip-te") == 2
    assert "mlx5_0: sysfs gives no rate" in capsys.readouterr().err
    assert not (tmp_path / "ib.log").exists()


# --- the run's check, gates and report ------------------------------------------------------------------------

@pytest.fixture
def even_run(tmp_path):
    """A run that passes every check (an even split over the four rails), to lay a baseline beside."""
    run = fixture_run(tmp_path / "r", SCENARIO)
    write_map(run, {g: f"mlx5_{g // 2}" for g in range(8)})
    resplit(run, dict.fromkeys(FOUR, 0.25))
    assert failed(evaluate(compute_summary(run, SCENARIO), SCENARIO)) == []
    return run


def test_check_the_gates_and_the_report_name_the_port(node, even_run, capsys):
    tmp_path, bin_dir = node
    fakebin.ib_write_bw(bin_dir, tables={f"mlx5_1:{ALONE['mlx5_1']}": "ib_write_bw-client-gbits-240.txt",
                                         f"mlx5_2:{TOGETHER['mlx5_2']}": "ib_write_bw-client-gbits-300.txt"})
    assert _baseline(tmp_path, even_run.root) == 1
    capsys.readouterr()
    summary = compute_summary(even_run, SCENARIO)
    results = [r for r in evaluate(summary, SCENARIO) if r.name.startswith("port_baseline_")]
    assert len(results) == 8  # four ports, alone and all at once
    assert [(r.name, r.detail.split(":")[0]) for r in failed(results)] == [
        ("port_baseline_alone", "port mlx5_1 alone"), ("port_baseline_together", "port mlx5_2 with all ports at once")]
    assert {r.bound for r in results} == {45.0}
    result = pdrepro("check", even_run.root)
    assert result.rc == 1 and "Traceback" not in result.err
    lines = [l for l in result.out.splitlines() if l.startswith("FAIL ")]
    assert lines == ["FAIL port mlx5_1 alone: 30.00 GB/s = 60.0 % of its 50.0 GB/s line rate, short of 90 %",
                     "FAIL port mlx5_2 with all ports at once: 37.50 GB/s = 75.0 % of its 50.0 GB/s line rate, "
                     "short of 90 %"]
    assert "8 failed" not in result.out and "2 failed" in result.out
    text = render_report(summary)
    section = text.split("## Fabric baseline per port")[1].split("\n## ")[0]
    rows = {l.split("|")[1].strip(): l for l in section.splitlines() if l.startswith("| mlx5_")}
    assert "30.00 (60.0 %)" in rows["mlx5_1"] and "FAIL (short) alone" in rows["mlx5_1"]
    assert "37.50 (75.0 %)" in rows["mlx5_2"] and "FAIL (short) together" in rows["mlx5_2"]
    assert [c.strip() for c in rows["mlx5_0"].strip().strip("|").split("|")][5] == "PASS"
    assert "Aggregate, all ports at once: 176.03 GB/s." in section
    # a thresholds file that lowers the floor passes them, and says it loosened the bound
    loose = tmp_path / "loose.yaml"
    loose.write_text("min_port_baseline_fraction: 0.5\n")
    result = pdrepro("check", even_run.root, "--thresholds", loose)
    assert result.rc == 0, result.out
    assert "BOUND min_port_baseline_fraction: loosened, 0.5 instead of the run's 0.9" in result.out


def test_a_hand_edited_record_is_judged_not_trusted(even_run):
    # A figure above the port's line rate, one with no line rate, a string and no figure: each a FAIL by name.
    ports = [{"local": f"mlx5_{i}", "remote": f"mlx5_{i}", "line_rate_GB_s": 50.0,
              "alone": {"bw_average_GB_s": 46.0}, "together": {"bw_average_GB_s": 46.0}} for i in range(4)]
    ports[0]["alone"]["bw_average_GB_s"] = 60.0
    ports[1]["line_rate_GB_s"] = None
    ports[2]["together"]["bw_average_GB_s"] = "46.0"
    del ports[3]["together"]
    even_run.baseline_file.write_text(json.dumps({"ib_write_bw": {"ports": ports}}))
    results = evaluate(compute_summary(even_run, SCENARIO), SCENARIO)
    bad = {(r.name, r.detail.split(":")[0]): r.detail for r in failed(results)}
    assert set(bad) == {("port_baseline_alone", "port mlx5_0 alone"), ("port_baseline_alone", "port mlx5_1 alone"),
                        ("port_baseline_together", "port mlx5_1 with all ports at once"),
                        ("port_baseline_together", "port mlx5_2 with all ports at once"),
                        ("port_baseline_together", "port mlx5_3 with all ports at once")}
    assert "above its 50.0 GB/s line rate" in bad[("port_baseline_alone", "port mlx5_0 alone")]
    assert "no line rate" in bad[("port_baseline_alone", "port mlx5_1 alone")]
    assert "not run" in bad[("port_baseline_together", "port mlx5_3 with all ports at once")]


def test_an_older_record_without_ports_adds_no_port_check(even_run):
    even_run.baseline_file.write_text(json.dumps({
        "ib_write_bw": {"pairs": [{"local": "mlx5_0", "bw_average_GB_s": 46.2}], "mode": "concurrent",
                        "aggregate_GB_s": 46.2, "errors": []}, "baseline_GB_s": 46.2, "line_rate_GB_s": 200.0}))
    summary = as_summary(compute_summary(even_run, SCENARIO))
    assert summary.baseline_ports is None and summary.baseline_GB_s == 46.2
    assert failed(evaluate(summary, SCENARIO)) == []
    assert "## Fabric baseline per port" not in render_report(summary)


def test_the_judgement_at_its_edges():
    p = BaselinePort(port="mlx5_0", line_rate_GB_s=50.0, alone_GB_s=45.0, together_GB_s=50.0)
    assert judge_port(p, "alone", 0.9).state == "pass"       # exactly 90 % passes
    assert judge_port(p, "together", 0.9).state == "pass"    # exactly the line rate is no contradiction
    assert judge_port(p.model_copy(update={"alone_GB_s": 44.99}), "alone", 0.9).state == "short"
    assert judge_port(p.model_copy(update={"together_GB_s": 50.01}), "together", 0.9).state == "contradiction"
    for odd in (0.0, -1.0, float("nan"), float("inf")):
        assert judge_port(p.model_copy(update={"alone_GB_s": odd}), "alone", 0.9).state in ("unmeasured",
                                                                                             "contradiction")


def test_the_default_floor_keeps_recorded_fingerprints_and_a_set_one_changes_it():
    same = SCENARIO.with_thresholds(SCENARIO.thresholds.model_copy(update={"min_port_baseline_fraction": 0.9}))
    other = SCENARIO.with_thresholds(SCENARIO.thresholds.model_copy(update={"min_port_baseline_fraction": 0.8}))
    assert same.fingerprint == SCENARIO.fingerprint != other.fingerprint


def test_the_gates_fail_the_port_gate_by_name_and_no_other(node, even_run):
    import subprocess
    import sys
    import xml.etree.ElementTree as ET
    from pathlib import Path

    tmp_path, bin_dir = node
    fakebin.ib_write_bw(bin_dir, tables={f"mlx5_1:{ALONE['mlx5_1']}": "ib_write_bw-client-gbits-240.txt"})
    assert _baseline(tmp_path, even_run.root) == 1
    repo = Path(__file__).resolve().parents[2]
    proc = subprocess.run([sys.executable, "-m", "pytest", "repro/", "-p", "no:cacheprovider", "-p", "no:xdist",
                           "--run-dir", str(even_run.root), "--junitxml", str(tmp_path / "junit.xml"), "-rf"], cwd=repo,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stdout[-2000:]
    cases = ET.parse(tmp_path / "junit.xml").getroot().iter("testcase")
    failed_gates = sorted(c.get("name") for c in cases if c.find("failure") is not None)
    assert failed_gates == ["test_each_port_reaches_its_line_rate_in_the_baseline"]
    assert "port mlx5_1 alone: 30.00 GB/s = 60.0 % of its 50.0 GB/s line rate, short of 90 %" in proc.stdout
