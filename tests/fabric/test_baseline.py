"""pdrepro baseline with perftest and transfer_engine_bench stand-ins on PATH that print fixtures in
the tools' exact formats (tests/fixtures/)."""

from __future__ import annotations

import json

import fakebin
import pytest
from sysfs_builder import h20_node

from pdrepro.cli import main
from pdrepro.parsers import perftest, tebench

PEER = "192.168.100.12"


@pytest.fixture
def node(tmp_path, monkeypatch):
    bin_dir = fakebin.first_on_path(tmp_path / "bin", monkeypatch)
    h20_node(tmp_path / "sys")
    return tmp_path, bin_dir


def _argv(tmp_path, *extra):
    return ["baseline", "--peer", PEER, "--sysfs-root", str(tmp_path / "sys"), "--out", str(tmp_path / "run"),
            "--duration", "1", *extra]


def test_parse_perftest_units():
    gbits = perftest.parse_bw(fakebin.served(fakebin.FIXTURES / "perftest" / "ib_write_bw-client-gbits.txt"))
    mbs = perftest.parse_bw(fakebin.served(fakebin.FIXTURES / "perftest" / "ib_write_bw-client-mbs.txt"))
    assert gbits.unit_printed == "Gb/sec" and gbits.average_GB_s == pytest.approx(369.41 / 8)
    assert mbs.unit_printed == "MB/sec" and mbs.average_GB_s == pytest.approx(44035.77 * 2**20 / 1e9)
    # the same run printed both ways: MB/sec is MiB/s, so the two agree in GB/s
    assert mbs.average_GB_s == pytest.approx(gbits.average_GB_s, rel=1e-4)
    assert gbits.msg_bytes == 65536 and gbits.iterations == 7046312
    with pytest.raises(ValueError):
        perftest.parse_bw(" Couldn't connect to 192.168.100.12:18515\n")


def test_parse_transfer_engine_bench():
    text = fakebin.served(fakebin.FIXTURES / "mooncake" / "te-initiator.log")
    res = tebench.parse_result(text)
    assert (res.duration_s, res.batch_count, res.throughput_GB_s) == (10.01, 213170, 178.64)
    gib = tebench.parse_result("Test completed: duration 10.00, batch count 10, throughput 1.50 GiB/s")
    assert gib.throughput_GB_s == pytest.approx(1.5 * 2**30 / 1e9)
    assert tebench.parse_segment(fakebin.served(fakebin.FIXTURES / "mooncake" / "te-target.log")) == "192.168.100.12:16999"
    with pytest.raises(ValueError):
        tebench.parse_result("E1129 transfer_engine_bench.cpp:391] Unable to get target segment ID")


def test_client_measures_and_writes_baseline_json(node, capsys):
    tmp_path, bin_dir = node
    fakebin.ib_write_bw(bin_dir, log=tmp_path / "ib.log")
    fakebin.transfer_engine_bench(bin_dir, log=tmp_path / "te.log")
    assert main(_argv(tmp_path)) == 0
    data = json.loads((tmp_path / "run" / "baseline.json").read_text())
    ports = data["ib_write_bw"]["ports"]
    assert [(p["local"], p["remote"]) for p in ports] == [(f"mlx5_{i}", f"mlx5_{i}") for i in range(4)]
    assert ports[0]["alone"]["bw_average_GB_s"] == pytest.approx(46.176, abs=1e-3)
    assert ports[0]["together"]["bw_average_GB_s"] == pytest.approx(46.176, abs=1e-3)
    assert ports[0]["line_rate_GB_s"] == 50.0
    assert data["ib_write_bw"]["aggregate_GB_s"] == pytest.approx(4 * 46.176, abs=0.01)
    assert data["transfer_engine_bench"]["throughput_GB_s"] == 178.64
    assert data["baseline_GB_s"] == 178.64 and data["baseline_source"] == "transfer_engine_bench"
    assert data["line_rate_GB_s"] == 200.0
    calls = (tmp_path / "ib.log").read_text().splitlines()
    assert len(calls) == 8  # each port alone, then all four at once
    assert all("-x 3" in c and "--report_gbits" in c and c.endswith(PEER) for c in calls)
    # alone: 18515.. in turn; all at once: the next four, so no run meets a listener still busy with another
    assert [c.split("-p ")[1].split()[0] for c in calls[:4]] == ["18515", "18516", "18517", "18518"]
    assert sorted(c.split("-p ")[1].split()[0] for c in calls[4:]) == ["18519", "18520", "18521", "18522"]
    te = (tmp_path / "te.log").read_text()
    assert "--mode initiator" in te and f"--segment_id {PEER}:16999" in te and "--use_vram" in te
    # Every GPU's buffer needs a NIC: discovery maps each GPU to its nearest, limited to the measured NICs.
    assert "--auto_discovery" in te and "--gpu_id -1" in te and "MC_TE_FILTERS=mlx5_0,mlx5_1,mlx5_2,mlx5_3" in te
    assert (tmp_path / "run" / "baseline" / "ib_write_bw-alone-mlx5_2.txt").read_text().count("mlx5_2") == 1
    assert (tmp_path / "run" / "baseline" / "ib_write_bw-together-mlx5_2.txt").read_text().count("mlx5_2") == 1
    out = capsys.readouterr().out
    assert "aggregate, all at once: 184.70 GB/s" in out and "89.3 % of the 200.0 GB/s line rate" in out
    assert "every port at least 90 % of its line rate" in out


def test_broken_te_falls_back_to_the_perftest_aggregate(node, capsys):
    tmp_path, bin_dir = node
    fakebin.ib_write_bw(bin_dir)
    fakebin.transfer_engine_bench(bin_dir, broken=True)
    assert main(_argv(tmp_path)) == 0
    data = json.loads((tmp_path / "run" / "baseline.json").read_text())
    assert data["transfer_engine_bench"]["throughput_GB_s"] is None
    assert "Unable to get target segment ID" in data["transfer_engine_bench"]["error"]
    assert data["baseline_source"] == "ib_write_bw"
    assert data["baseline_GB_s"] == pytest.approx(4 * 46.176, abs=0.01)


def test_failed_pair_is_refused_naming_it_and_what_was_measured_is_kept(node, capsys):
    tmp_path, bin_dir = node
    fakebin.ib_write_bw(bin_dir, fail_on="mlx5_1")
    fakebin.transfer_engine_bench(bin_dir, broken=True)
    assert main(_argv(tmp_path)) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "port mlx5_1 alone: not measured (exit 1: " in err
    assert "Couldn't connect" in err and "baseline.json" in err
    data = json.loads((tmp_path / "run" / "baseline.json").read_text())
    ports = {p["local"]: p for p in data["ib_write_bw"]["ports"]}
    assert ports["mlx5_1"]["alone"]["bw_average_GB_s"] is None and "exit 1" in ports["mlx5_1"]["alone"]["error"]
    assert ports["mlx5_0"]["alone"]["bw_average_GB_s"] == pytest.approx(46.176, abs=1e-3)
    # a sum missing a port is no aggregate, so no ceiling of the four ports either
    assert data["ib_write_bw"]["aggregate_GB_s"] is None and data["baseline_GB_s"] is None


def test_missing_tools_say_what_to_install(node, capsys, monkeypatch):
    tmp_path, bin_dir = node
    monkeypatch.setenv("PATH", str(bin_dir))  # nothing else: the host may have perftest installed
    assert main(_argv(tmp_path)) == 2
    assert "install perftest" in capsys.readouterr().err
    assert main(_argv(tmp_path, "--skip-perftest")) == 2
    assert "transfer_engine_bench not found" in capsys.readouterr().err
    assert not (tmp_path / "run" / "baseline.json").exists()


def test_bad_arguments(node, capsys):
    tmp_path, bin_dir = node
    assert main(["baseline", "--sysfs-root", str(tmp_path / "sys"), "--out", str(tmp_path / "r")]) == 2
    assert "--peer HOST is required" in capsys.readouterr().err
    assert main(_argv(tmp_path, "--nics", "mlx5_9")) == 2
    assert "mlx5_9 not found" in capsys.readouterr().err
    assert main(_argv(tmp_path, "--skip-perftest", "--skip-te")) == 2
    assert main(_argv(tmp_path, "--nics", "mlx5_0,mlx5_1", "--remote-nics", "mlx5_0")) == 2
    assert "one per local NIC" in capsys.readouterr().err
    h20_node(tmp_path / "down", down=("mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"))
    assert main(["baseline", "--peer", PEER, "--sysfs-root", str(tmp_path / "down"), "--out", str(tmp_path / "r")]) == 2
    assert "pdrepro doctor" in capsys.readouterr().err


def test_server_side_starts_both_and_reports_segment(node, capsys):
    tmp_path, bin_dir = node
    fakebin.ib_write_bw(bin_dir, log=tmp_path / "ib.log")
    fakebin.transfer_engine_bench(bin_dir, log=tmp_path / "te.log")
    assert main(["baseline", "--role", "server", "--peer", "192.168.100.11", "--sysfs-root", str(tmp_path / "sys"),
                 "--duration", "1", "--serve-seconds", "1", "--nics", "mlx5_0,mlx5_1"]) == 0
    out = capsys.readouterr().out
    assert "segment 192.168.100.12:16999" in out
    assert "ib_write_bw mlx5_1 alone: finished (exit 0)" in out
    assert "ib_write_bw mlx5_1 with all ports at once: finished (exit 0)" in out
    calls = (tmp_path / "ib.log").read_text().splitlines()
    assert len(calls) == 4 and not any(c.endswith("192.168.100.11") for c in calls)  # servers take no peer
    # one listener per pair and run, on the ports the client takes: alone 18515..18516, all at once 18517..18518
    assert sorted(c.split("-p ")[1].split()[0] for c in calls) == ["18515", "18516", "18517", "18518"]
    te = (tmp_path / "te.log").read_text()
    assert "--mode target" in te and "--auto_discovery" in te and "MC_TE_FILTERS=mlx5_0,mlx5_1" in te


def test_load_ceiling(node):
    from pdrepro.core.errors import UserError
    from pdrepro.rundir import RunDir
    tmp_path, bin_dir = node
    run = RunDir(tmp_path / "run")
    assert run.baseline_ceiling() is None
    fakebin.ib_write_bw(bin_dir)
    fakebin.transfer_engine_bench(bin_dir)
    assert main(_argv(tmp_path)) == 0
    assert run.baseline_ceiling() == 178.64
    (tmp_path / "run" / "baseline.json").write_text("{cut")
    with pytest.raises(UserError, match="baseline.json: unreadable"):
        run.baseline_ceiling()


def test_named_nics_only_are_measured(node):
    tmp_path, bin_dir = node
    fakebin.ib_write_bw(bin_dir, log=tmp_path / "ib.log")
    assert main(_argv(tmp_path, "--skip-te", "--nics", "mlx5_2,mlx5_3")) == 0
    data = json.loads((tmp_path / "run" / "baseline.json").read_text())
    assert [p["local"] for p in data["ib_write_bw"]["ports"]] == ["mlx5_2", "mlx5_3"]
    assert len((tmp_path / "ib.log").read_text().splitlines()) == 4
    assert data["baseline_source"] == "ib_write_bw" and "transfer_engine_bench" not in data
    assert data["line_rate_GB_s"] == 100.0


def test_message_size_sweep_takes_the_largest_size_gbits():
    # ib_write_bw -a --report_gbits, from NVIDIA's GPU Operator documentation: 2 B ... 8 MiB.
    text = (fakebin.RECORDED / "perftest" / "ib_write_bw-a-gbits-gpu-operator-docs.txt").read_text()
    res = perftest.parse_bw(text)
    assert res.msg_bytes == 8388608 and res.iterations == 5000
    assert res.average_GB_s == pytest.approx(92.39 / 8)
    assert res.sizes_seen == 23


def test_message_size_sweep_takes_the_largest_size_mbs_with_warnings_between_rows():
    text = (fakebin.RECORDED.parent / "fixtures" / "perftest" / "ib_write_bw-a-mbs-warnings.txt").read_text()
    res = perftest.parse_bw(text)
    assert res.msg_bytes == 8388608 and res.unit_printed == "MB/sec"
    assert res.average_GB_s == pytest.approx(46500.00 * 2**20 / 1e9)
    assert res.sizes_seen == 23


def test_older_transfer_engine_bench_without_a_unit_is_read_as_gb_s_with_a_note():
    # Builds up to early 2025 (Mooncake 348afd753 and later, before --report_unit) printed the
    # rate, bytes / seconds / 1e9, with no unit after it.
    line = ("I1216 10:12:07.552811 120311 transfer_engine_bench.cpp:352] Test completed: duration 10.00, "
            "batch count 26217, throughput 6.56")
    res = tebench.parse_result(line)
    assert res.throughput_GB_s == pytest.approx(6.56)
    assert "no unit" in res.note and "GB/s" in res.note


def test_throughput_in_an_unknown_unit_is_rejected_naming_the_line():
    with pytest.raises(ValueError, match="Test completed.*furlongs"):
        tebench.parse_result("Test completed: duration 10.00, batch count 5, throughput 6.56 furlongs/s")


def test_a_duration_printed_in_microseconds_is_read_in_seconds():
    line = "I1130 10:00:00.000000 1 bench.cpp:1] Test completed: duration 10012345us, batch count 42, throughput 12.5 GB/s\n"
    res = tebench.parse_result(line)
    assert res.duration_s == pytest.approx(10.012345) and res.throughput_GB_s == pytest.approx(12.5)


# Issue 15, 7: what no fabric can measure is refused here as analyze refuses it.

def test_a_ceiling_above_the_line_rate_is_refused(node, capsys):
    tmp_path, bin_dir = node
    fakebin.transfer_engine_bench(bin_dir)  # 178.64 GB/s over one 400 Gb/s NIC (50 GB/s)
    assert main(_argv(tmp_path, "--nics", "mlx5_0", "--skip-perftest")) == 2
    err = capsys.readouterr().err
    assert "178.64" in err and "line rate" in err and "50.0" in err
    assert json.loads((tmp_path / "run" / "baseline.json").read_text())["baseline_GB_s"] is None


def test_a_ceiling_of_zero_is_refused(node, capsys):
    tmp_path, bin_dir = node
    fakebin.transfer_engine_bench(bin_dir, throughput="0.00")
    assert main(_argv(tmp_path, "--skip-perftest")) == 2
    assert "baseline" in capsys.readouterr().err
    assert json.loads((tmp_path / "run" / "baseline.json").read_text())["baseline_GB_s"] is None


def test_analyze_refuses_a_recorded_ceiling_above_the_line_rate(tmp_path):
    from clihelp import assert_one_line_error, pdrepro
    from runbuilder import build_run

    from pdrepro.scenario.model import load_scenario

    run = build_run(tmp_path / "run", load_scenario("h20-qwen3-235b-1p1d"))
    run.baseline_file.write_text(json.dumps({"baseline_GB_s": 250.0, "line_rate_GB_s": 200.0}))
    assert_one_line_error(pdrepro("analyze", run.root), "analyze", "baseline.json", "250", "line rate")
