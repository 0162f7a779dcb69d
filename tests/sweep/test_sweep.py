"""The sweep against an in-test PD stack (router, prefill, decode) whose logs
are in the upstream formats, with the bench client substituted."""

import json
import os
import time
from pathlib import Path

import pytest
from fakecluster import FakeBench, FakeCluster
from runbuilder import Row
from sweephelp import config, short_scenario

from pdrepro.core.errors import UserError
from pdrepro.kinds.registry import analyze_run
from pdrepro.sweep.runner import run_sweep
from pdrepro.sweep.state import result_problem


@pytest.fixture
def cluster(tmp_path):
    with FakeCluster(tmp_path, short_scenario()) as c:
        yield c


def test_full_sweep_writes_results_logs_state_and_overhead(tmp_path, cluster):
    bench = FakeBench(cluster)
    lines = []
    out = run_sweep(config(tmp_path, cluster, bench, lines))
    assert bench.calls == [128, 256, 512]
    assert out.done == [128, 256, 512] and not out.failed
    for L in (128, 256, 512):
        assert result_problem(out.run.bench_file(L), 50) is None
    assert not list(out.run.bench_dir.glob(".*partial"))
    prefill = out.run.prefill_log.read_text()
    assert "installTransport, type=rdma" in prefill
    served = [l for l in prefill.splitlines() if "type=prefill)" in l and "HEALTH_CHECK" not in l]
    assert len(served) == 3 * 51  # 50 prompts + 1 warm-up per length
    state = json.loads((out.run.root / "sweep-state.json").read_text())
    assert {k: v["status"] for k, v in state["lengths"].items()} == {"128": "done", "256": "done", "512": "done"}
    text = "\n".join(lines)
    assert "transport: prefill: RDMA on mlx5_0 (GID index 3)" in text
    assert "[2/3] prompt length 256" in text and "overall ETA" in text
    overhead = [l for l in lines if l.startswith("sweep overhead:")]
    assert len(overhead) == 1 and "% of the sweep; target < 2 %" in overhead[0]
    assert 0 <= out.overhead_pct <= 100
    # The client ran against the router and flushed the cache first, as published.
    assert ("POST", "/flush_cache") in cluster.router.requests
    assert bench.mounts[0][tmp_path.joinpath("run").resolve()] is True


def test_rerun_skips_complete_lengths_and_reruns_broken_one(tmp_path, cluster):
    run_sweep(config(tmp_path, cluster, FakeBench(cluster)))
    target = tmp_path / "run" / "bench" / "result-256.jsonl"
    target.write_text(target.read_text()[:100])  # cut short, as by a full disk
    again = FakeBench(cluster)
    lines = []
    out = run_sweep(config(tmp_path, cluster, again, lines))
    assert again.calls == [256]
    assert out.skipped == [128, 512]
    assert (tmp_path / "run" / "bench" / "result-256.jsonl.invalid").is_file()
    assert any("resuming: 2 length(s) already complete" in l for l in lines)
    prov = (tmp_path / "run" / "provenance.json").read_text()
    third, said = FakeBench(cluster), []
    run_sweep(config(tmp_path, cluster, third, said))
    assert third.calls == []
    # No client ran: no share of nothing (once printed as "100.00 % of the sweep").
    assert [l for l in said if l.startswith("sweep overhead:")] == ["sweep overhead: no length was measured in this call"]
    assert (tmp_path / "run" / "provenance.json").read_text() == prov  # nothing ran: the record stays


def test_interrupt_keeps_completed_lengths(tmp_path, cluster):
    bench = FakeBench(cluster, behaviour={256: "interrupt"})
    with pytest.raises(KeyboardInterrupt):
        run_sweep(config(tmp_path, cluster, bench))
    bench_dir = tmp_path / "run" / "bench"
    assert result_problem(bench_dir / "result-128.jsonl", 50) is None
    assert not (bench_dir / "result-256.jsonl").exists()
    assert not list(bench_dir.glob(".*partial"))
    state = json.loads((tmp_path / "run" / "sweep-state.json").read_text())
    assert state["events"][-1]["event"] == "interrupted" and state["events"][-1]["prompt_len"] == 256
    resumed = FakeBench(cluster)
    run_sweep(config(tmp_path, cluster, resumed))
    assert resumed.calls == [256, 512]


def test_length_timeout_is_recorded_and_sweep_continues(tmp_path, cluster):
    bench = FakeBench(cluster, behaviour={256: "hang"})
    lines = []
    out = run_sweep(config(tmp_path, cluster, bench, lines, length_timeout_s=0.2))
    assert bench.calls == [128, 256, 512]
    assert set(out.failed) == {256} and "timed out" in out.failed[256]
    assert any("prompt length 256: FAILED (timed out" in l for l in lines)
    state = json.loads((tmp_path / "run" / "sweep-state.json").read_text())
    assert state["lengths"]["256"]["status"] == "failed"
    prov = json.loads((tmp_path / "run" / "provenance.json").read_text())
    assert "256" in prov["sweep"]["failed"]


@pytest.mark.parametrize("policy, expected_calls", [("continue", [128, 256, 512]), ("stop", [128, 256])])
def test_failure_policy(tmp_path, cluster, policy, expected_calls):
    bench = FakeBench(cluster, behaviour={256: "fail"})
    out = run_sweep(config(tmp_path, cluster, bench, on_failure=policy))
    assert bench.calls == expected_calls
    log = tmp_path / "run" / "logs" / "bench-client.log"
    assert out.failed == {256: f"bench client exited with status 1 (its output: {log})"}
    assert (tmp_path / "run" / "bench" / "result-512.jsonl").exists() is (policy == "continue")


def test_incomplete_result_is_a_failed_length(tmp_path, cluster):
    out = run_sweep(config(tmp_path, cluster, FakeBench(cluster, behaviour={512: "short"})))
    assert out.failed == {512: "result not valid: completed 47 of 50 requests"}
    assert (tmp_path / "run" / "bench" / "result-512.jsonl.failed").is_file()
    assert not (tmp_path / "run" / "bench" / "result-512.jsonl").exists()


def test_a_length_of_empty_responses_is_a_failed_length(tmp_path, cluster):
    """Issue 15, 12: 50 HTTP 200s without a token are no completed length in the sweep's own account."""
    lines = []
    out = run_sweep(config(tmp_path, cluster, FakeBench(cluster, behaviour={256: "empty"}), lines=lines))
    assert list(out.failed) == [256] and "empty" in out.failed[256], out.failed
    assert any("1 failed" in line for line in lines), lines
    assert (tmp_path / "run" / "bench" / "result-256.jsonl.failed").is_file()


def test_provenance_contents(tmp_path, cluster, monkeypatch):
    from sysfs_builder import h20_node

    h20_node(tmp_path / "sys")
    monkeypatch.setenv("MC_GID_INDEX", "3")
    monkeypatch.setenv("NCCL_IB_HCA", "mlx5_0,mlx5_1")
    monkeypatch.setenv("SGLANG_DISAGGREGATION_WAITING_TIMEOUT", "600")
    monkeypatch.setenv("UNRELATED_SECRET", "x")
    run_sweep(config(tmp_path, cluster, FakeBench(cluster), sysfs=tmp_path / "sys" / "class" / "infiniband"))
    prov = json.loads((tmp_path / "run" / "provenance.json").read_text())
    from pdrepro.core.pins import load_pins

    assert prov["pins"]["sglang_commit"] == load_pins()["SGLANG_COMMIT"]
    assert prov["pins"]["mooncake_commit"] == load_pins()["MOONCAKE_COMMIT"]
    assert prov["scenario"]["fingerprint"] == cluster.scenario.fingerprint
    env = prov["environment"]
    assert env["MC_GID_INDEX"] == "3" and env["NCCL_IB_HCA"] == "mlx5_0,mlx5_1"
    assert env["SGLANG_DISAGGREGATION_WAITING_TIMEOUT"] == "600" and "UNRELATED_SECRET" not in env
    nics = prov["host"]["nics"]
    assert sorted(nics) == ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"]
    assert nics["mlx5_0"]["ports"]["1"]["rate"].startswith("400 Gb/sec")
    assert prov["host"]["kernel"] == os.uname().release
    assert prov["transport"]["proven"] is True
    assert prov["transport"]["servers"]["decode"]["devices"] == {f"mlx5_{i}": 3 for i in range(4)}
    assert prov["server_info"]["prefill"]["disaggregation_mode"] == "prefill"
    assert set(prov["sweep"]["lengths"]) == {"128", "256", "512"}


def test_metrics_per_length_are_the_difference_of_scrapes(tmp_path):
    from pdrepro.parsers.prom import parse_metrics_file

    with FakeCluster(tmp_path, short_scenario((128, 1024)), metrics=True) as c:
        run_sweep(config(tmp_path, c, FakeBench(c), scrape_metrics=True))
    metrics = tmp_path / "run" / "metrics"
    assert sorted(p.name for p in (metrics / "raw").iterdir()) == sorted(
        f"{role}-{when}-{L}.prom" for role in ("decode", "prefill") for L in (128, 1024) for when in ("after", "before"))
    for L, published_ms in ((128, 2.07), (1024, 3.96)):
        lat = parse_metrics_file(metrics / f"prefill-{L}.prom")["latency_ms"]
        assert lat.count == 51  # this length's 50 prompts and its warm-up, not the lengths before
        assert lat.mean == pytest.approx(published_ms, rel=0.2)
    after = parse_metrics_file(metrics / "raw" / "prefill-after-1024.prom")["latency_ms"]
    assert after.count == 102


def test_other_scenario_in_run_dir_is_refused(tmp_path, cluster):
    run_sweep(config(tmp_path, cluster, FakeBench(cluster)))
    with FakeCluster(tmp_path / "b", short_scenario((128, 256))) as other:
        with pytest.raises(UserError, match="holds a run of another scenario"):
            run_sweep(config(tmp_path, other, FakeBench(other)))


def test_sweep_output_analyses_and_passes_the_checks(tmp_path, cluster):
    """What the sweep leaves is a run the analysis reads: published figures in, gates pass."""
    from sysfs_builder import h20_node

    from pdrepro.verdicts.gates import evaluate, failed

    cluster.nics = h20_node(tmp_path / "sys")
    lines = []
    out = run_sweep(config(tmp_path, cluster, FakeBench(cluster), lines, analyze=analyze_run,
                           sysfs=tmp_path / "sys" / "class" / "infiniband"))
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert [r["prompt_len"] for r in summary["rows"]] == [128, 256, 512]
    counted = json.loads((tmp_path / "run" / "counters" / "512.json").read_text())["nodes"]
    assert "mlx5_3/1" in counted["decode"]["after"]["ports"]
    # A folder of logs gives no way onto the prefill node: the record says so.
    assert "not read" in counted["prefill"]["error"]
    assert summary["transport_evidence"]["proof"]["proven"] is True and summary["transport"] == "rdma"
    # The sweep records the devices it saw on the node it reads (mlx5_0..3 of the H20 tree).
    assert counted["decode"]["rdma_devices"] == [f"mlx5_{i}" for i in range(4)]
    assert summary["transport_evidence"]["rdma_devices"]["found"] is True
    row = {r["prompt_len"]: r for r in summary["rows"]}[512]
    assert row["bandwidth_GB_s"] == pytest.approx(66.18, rel=0.03)  # the published 512-token row
    assert failed(evaluate(summary, cluster.scenario)) == []
    assert out.summary is not None and (tmp_path / "run" / "report.md").is_file()
    assert any(l.startswith("analysis: report in") for l in lines)


def test_the_sweep_keeps_the_map_the_servers_were_started_with(tmp_path, cluster):
    """The servers name their GPU-to-NIC map in /get_server_info; the sweep keeps it, so each rail is judged."""
    from sysfs_builder import h20_node

    from pdrepro.verdicts.gates import evaluate, failed

    cluster.nics = h20_node(tmp_path / "sys")
    run_sweep(config(tmp_path, cluster, FakeBench(cluster), analyze=analyze_run,
                     sysfs=tmp_path / "sys" / "class" / "infiniband"))
    assert cluster.ib_devices_file is not None
    assert (tmp_path / "run" / "ib_devices.json").read_text() == Path(cluster.ib_devices_file).read_text()
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    results = evaluate(summary, cluster.scenario)
    rails = [r for r in results if r.name == "rail_share"]
    assert rails and all(r.passed for r in rails) and failed(results) == []


def test_servers_started_without_a_map_leave_the_rails_not_measured(tmp_path):
    from sysfs_builder import h20_node

    from pdrepro.verdicts.gates import evaluate, failed

    with FakeCluster(tmp_path, short_scenario(), ib_devices=False) as cluster:
        cluster.nics = h20_node(tmp_path / "sys")
        run_sweep(config(tmp_path, cluster, FakeBench(cluster), analyze=analyze_run,
                         sysfs=tmp_path / "sys" / "class" / "infiniband"))
    assert not (tmp_path / "run" / "ib_devices.json").exists()
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    bad = failed(evaluate(summary, cluster.scenario))
    assert bad and {r.name for r in bad} == {"rail_share"}
    assert all("not measured" in r.detail and "ib_devices.json" in r.detail for r in bad)


def test_overhead_counts_time_outside_the_client(tmp_path, cluster):
    lines = []
    # Start-ups long against the client's own time, so a loaded machine's delays cannot blur the two.
    out = run_sweep(config(tmp_path, cluster, FakeBench(cluster, seconds=0.3, startup_s=0.8), lines))
    assert 0.9 <= out.bench_s < 2.4  # 3 x 0.3 s in the client; with the start-ups it would be 3.3 s or more
    assert out.overhead_s >= 2.4
    line = next(l for l in lines if l.startswith("sweep overhead:"))
    assert f"{out.overhead_s:.1f} s of" in line and f"({out.overhead_pct:.2f} % of the sweep" in line


def test_slow_host_facts_are_collected_while_the_first_length_runs(tmp_path, cluster, monkeypatch):
    """On the H200 run collecting provenance (torch with its CUDA, the Mooncake import, nvidia-smi) took
    most of the sweep's 4 % outside the client: it now runs beside the first length, and the record is
    still complete, with the servers asked once they are healthy."""
    from pdrepro.sweep import provenance

    def slow_versions():
        time.sleep(1.0)
        return {"packages": {"sglang": {"found": True, "version": "stand-in"}}}

    monkeypatch.setattr(provenance, "versions", slow_versions)
    lines = []
    out = run_sweep(config(tmp_path, cluster, FakeBench(cluster, seconds=0.6), lines))
    assert out.done == [128, 256, 512]
    assert out.overhead_s < 0.5, lines  # the 1 s collection is hidden behind the first length
    prov = json.loads((tmp_path / "run" / "provenance.json").read_text())
    assert prov["versions"]["packages"]["sglang"]["version"] == "stand-in"
    assert set(prov["server_info"]) == {"prefill", "decode"}
    assert all("error" not in info for info in prov["server_info"].values())
    assert set(prov["sweep"]["lengths"]) == {"128", "256", "512"}


def test_provenance_written_early_holds_the_facts_even_when_the_sweep_stops_at_once(tmp_path, cluster, monkeypatch):
    from pdrepro.sweep import provenance

    monkeypatch.setattr(provenance, "versions", lambda: (time.sleep(0.5), {"slow": True})[1])
    with pytest.raises(KeyboardInterrupt):
        run_sweep(config(tmp_path, cluster, FakeBench(cluster, behaviour={128: "interrupt"})))
    prov = json.loads((tmp_path / "run" / "provenance.json").read_text())
    assert prov["versions"] == {"slow": True}


def test_comparison_configurations_sweep_into_one_run(tmp_path):
    """1P1D against the PD stack (transport proven), 2-regular against plain workers; one report."""
    from pdrepro.scenario.model import load_scenario

    sc = load_scenario("a10-qwen25-7b-rate4")
    rows = {2048: Row(2048, 1111.94, 3.0)}
    with FakeCluster(tmp_path / "pd", sc) as pd:
        out = run_sweep(config(tmp_path, pd, FakeBench(pd, rows=rows), configuration="1P1D"))
    assert out.run.root == (tmp_path / "run" / "1P1D").resolve()
    with FakeCluster(tmp_path / "regular", sc, transport="none") as reg:
        lines = []
        out = run_sweep(config(tmp_path, reg, FakeBench(reg, rows=rows), lines, configuration="2-regular",
                               prefill_url=None, decode_url=None, worker_urls=(reg.prefill.url, reg.decode.url),
                               analyze=analyze_run))
    assert not any(l.startswith("transport:") for l in lines)  # no KV transfer to prove
    run = tmp_path / "run"
    for name in ("1P1D", "2-regular"):
        assert (run / name / "bench" / "result-2048.jsonl").is_file()
        assert json.loads((run / name / "provenance.json").read_text())["configuration"] == name
    assert json.loads((run / "1P1D" / "provenance.json").read_text())["transport"]["proven"] is True
    report = (run / "report.md").read_text()
    assert "1P1D measured" in report and "2-regular published" in report and "1,215.17" in report
    assert out.summary["configurations"]["2-regular"]["measured"]["completed"] == 200


def test_heartbeat_reports_elapsed_and_time_left_during_a_length(tmp_path, cluster):
    lines = []
    run_sweep(config(tmp_path, cluster, FakeBench(cluster, seconds=0.5), lines, heartbeat_s=0.2))
    first = [l for l in lines if l.startswith("  prompt length 128:")]
    later = [l for l in lines if l.startswith("  prompt length 512:")]
    assert first and all(l.endswith("elapsed") for l in first)  # nothing measured yet: no estimate
    assert later and ("left" in later[0] or "over the estimate" in later[0])


def test_client_paths_are_absolute_and_each_mounted_at_itself(tmp_path, cluster, monkeypatch):
    """The client's container does not share our working folder: relative paths given on the
    command line must reach it as absolute ones, and a separate tokenizer must be mounted too."""
    import dataclasses

    from sweephelp import dataset

    (tmp_path / "tok").mkdir()
    dataset(tmp_path)
    monkeypatch.chdir(tmp_path)
    bench = FakeBench(cluster)
    cfg = config(tmp_path, cluster, bench)
    cfg.target = dataclasses.replace(cfg.target, model_path=f"models/{cluster.scenario.model.name}",
                                     dataset_path="ShareGPT_V3_unfiltered_cleaned_split.json", tokenizer="tok")
    run_sweep(cfg)
    argv, mounts = bench.argvs[0], bench.mounts[0]
    for flag, expected in (("--model", tmp_path / "models" / cluster.scenario.model.name),
                           ("--tokenizer", tmp_path / "tok"),
                           ("--dataset-path", tmp_path / "ShareGPT_V3_unfiltered_cleaned_split.json")):
        value = argv[argv.index(flag) + 1]
        assert value == str(expected), flag
        assert mounts.get(Path(value)) is False, flag  # read-only, at the same path
    assert argv[argv.index("--served-model-name") + 1] == cluster.scenario.model.name


def test_kv_that_never_crossed_the_nics_fails_the_witness(tmp_path, cluster):
    """Logs that say RDMA and engine figures that look right, but the NICs counted no KV."""
    from sysfs_builder import h20_node

    from pdrepro.verdicts.gates import evaluate, failed

    cluster.nics = h20_node(tmp_path / "sys")
    cluster.kv_crosses_nics = False
    run_sweep(config(tmp_path, cluster, FakeBench(cluster), analyze=analyze_run, sysfs=tmp_path / "sys" / "class" / "infiniband"))
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    results = failed(evaluate(summary, cluster.scenario))
    bad = [r for r in results if r.name == "nic_witness"]
    assert sorted((r.name, r.prompt_len) for r in bad) == [("nic_witness", 128), ("nic_witness", 256), ("nic_witness", 512)]
    assert all(r.figure == 0.0 and "TCP fallback or a dead path" in r.detail for r in bad)
    # The servers' map names the rails; none of them moved a byte, so no rail's share is a pass either.
    rails = [r for r in results if r.name != "nic_witness"]
    assert rails and all(r.name == "rail_share" and "no rail of the node moved a byte" in r.detail for r in rails)
