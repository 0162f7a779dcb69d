"""The `pytest repro/` gates, run as a user runs them, on runs built from the
published figures: they pass as published and fail, naming the length, when
one length degrades."""

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from clihelp import pdrepro
from runbuilder import build_run, sweep_provenance
from runkinds import tree_hash

from pdrepro.scenario.model import load_scenario

REPO = Path(__file__).resolve().parents[2]


def _provenance(scenario, proven=True):
    # As the sweep records it (the full pins, what each server ran, the proof): a gated run must show what ran.
    return sweep_provenance(scenario, proven)


def _gates(*args, junit=True):
    """`pytest repro/` as a user runs it; its JUnit file where it is told, beside the run (``_junit``)."""
    words = list(map(str, args))
    told = []
    if junit and "--run-dir" in words:
        told = [f"--junitxml={Path(words[words.index('--run-dir') + 1]).parent / 'junit.xml'}"]
    return subprocess.run([sys.executable, "-m", "pytest", "repro/", "-p", "no:cacheprovider", "-p", "no:xdist",
                           *words, *told], cwd=REPO, capture_output=True, text=True, timeout=180)


def _junit(run):
    root = ET.parse(run.parent / "junit.xml").getroot()
    cases = root.iter("testcase")
    return {c.get("name"): ("failed" if c.find("failure") is not None else "skipped" if c.find("skipped") is not None
                            else "error" if c.find("error") is not None else "passed") for c in cases}


def test_published_run_passes_every_gate(tmp_path):
    sc = load_scenario("h20-qwen3-235b-1p1d")
    run = build_run(tmp_path / "run", sc, provenance=_provenance(sc)).root
    before = tree_hash(run)
    proc = _gates("--run-dir", run)
    assert proc.returncode == 0, proc.stdout[-3000:]
    results = _junit(run)
    assert len(results) >= 6 * 9 + 5
    assert set(results.values()) == {"passed"}
    assert "test_bandwidth[L32768]" in results and "test_ttft[L128]" in results
    # The gates judge in memory and write nothing into the run: their JUnit file went where pytest was told.
    assert tree_hash(run) == before and not (run / "junit.xml").exists()
    assert f"report: not written (`pdrepro analyze {run}` writes {run / 'report.md'})" in proc.stdout
    assert f"JUnit XML: {tmp_path / 'junit.xml'}" in proc.stdout


def test_gates_told_no_junit_file_write_none(tmp_path):
    sc = load_scenario("h20-qwen3-235b-1p1d")
    run = build_run(tmp_path / "run", sc, provenance=_provenance(sc)).root
    before = tree_hash(run)
    proc = _gates("--run-dir", run, junit=False)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert tree_hash(run) == before and sorted(p.name for p in tmp_path.iterdir()) == ["run"]
    assert "JUnit XML: not written (pass --junitxml FILE)" in proc.stdout


def test_one_degraded_length_fails_naming_length_figure_and_bound(tmp_path):
    sc = load_scenario("h20-qwen3-235b-1p1d")
    run = build_run(tmp_path / "run", sc, provenance=_provenance(sc), transfer_factor={8192: 1.4}).root
    proc = _gates("--run-dir", run, "-rf")
    assert proc.returncode == 1
    results = _junit(run)
    failed = sorted(name for name, verdict in results.items() if verdict != "passed")
    assert failed == ["test_bandwidth[L8192]"]
    assert any("length 8192: bandwidth" in l and "GB/s fails >= 124.2 GB/s" in l for l in proc.stdout.splitlines())


def test_tcp_transport_fails_the_transport_gate(tmp_path):
    sc = load_scenario("h20-qwen3-235b-1p1d")
    run = build_run(tmp_path / "run", sc, provenance=_provenance(sc, proven=False)).root
    proc = _gates("--run-dir", run, "-rf")
    assert proc.returncode == 1
    assert [n for n, v in _junit(run).items() if v != "passed"] == ["test_transport_proven"]
    assert "KV transport not proven to be RDMA: prefill: tcp (HCAs found [0])" in proc.stdout


def test_transport_not_checked_fails_saying_so(tmp_path):
    sc = load_scenario("h20-qwen3-235b-1p1d")
    prov = dict(_provenance(sc), transport={"proven": False, "skipped": True})
    run = build_run(tmp_path / "run", sc, provenance=prov).root
    proc = _gates("--run-dir", run, "-rf")
    assert proc.returncode == 1
    assert [n for n, v in _junit(run).items() if v != "passed"] == ["test_transport_proven"]
    assert "KV transport not checked: the sweep ran with --no-transport-proof" in proc.stdout


def test_missing_length_fails_its_gates(tmp_path):
    sc = load_scenario("h20-qwen3-235b-1p1d")
    run = build_run(tmp_path / "run", sc, provenance=_provenance(sc), drop_lengths={16384}).root
    proc = _gates("--run-dir", run)
    # A length's bench result missing is unreadable input: exit 2 with its one line, as `pdrepro check` ends.
    assert proc.returncode == 2 and proc.returncode == pdrepro("check", run).rc
    assert [l for l in proc.stdout.splitlines() if "pdrepro gates: error:" in l and "result-16384.jsonl" in l]
    failed = {n for n, v in _junit(run).items() if v != "passed"}
    assert "test_bandwidth[L16384]" in failed and "test_all_prompts_completed[L16384]" in failed
    assert not any("L8192" in n for n in failed)


def test_thresholds_file_overrides_bounds(tmp_path):
    sc = load_scenario("h20-qwen3-235b-1p1d")
    run = build_run(tmp_path / "run", sc, provenance=_provenance(sc)).root
    strict = tmp_path / "strict.yaml"
    strict.write_text("thresholds:\n  min_peak_bandwidth_GB_s: 190\n")
    proc = _gates("--run-dir", run, "--thresholds", strict, "-rf")
    assert proc.returncode == 1
    assert "peak bandwidth 164.33 GB/s fails >= 190 GB/s" in proc.stdout


def test_without_a_run_the_suite_refuses_to_pass_empty():
    proc = _gates()
    assert proc.returncode != 0
    assert "repro gates need a run: pass --run-dir RUN" in proc.stderr + proc.stdout


def test_comparison_run_gates(tmp_path):
    sc = load_scenario("a10-qwen25-7b-rate1")
    run = tmp_path / "run"
    (run).mkdir()
    (run / "scenario.yaml").write_text(sc.to_yaml())
    for name, fig in sc.reference.configurations.items():
        bench = run / name / "bench"
        bench.mkdir(parents=True)
        (run / name / "provenance.json").write_text(json.dumps(_provenance(sc)))
        (bench / "result-8192.jsonl").write_text(json.dumps({
            "completed": 50, "output_throughput": fig["output_tok_s"], "total_throughput": fig["total_tok_s"],
            "mean_e2e_latency_ms": fig["mean_e2e_ms"], "mean_ttft_ms": fig["mean_ttft_ms"], "p99_ttft_ms": fig["p99_ttft_ms"],
            "mean_itl_ms": fig["mean_itl_ms"], "p99_itl_ms": fig["p99_itl_ms"]}) + "\n")
    proc = _gates("--run-dir", run)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert set(_junit(run)) == {"test_provenance_present", "test_comparison_configurations_measured",
                                "test_comparison_completed", "test_comparison_no_request_errors",
                                "test_no_other_check_failed"}
    (run / "2-regular" / "provenance.json").unlink()
    (run / "2-regular" / "bench" / "result-8192.jsonl").unlink()
    proc = _gates("--run-dir", run)
    assert proc.returncode == 1 and "2-regular/provenance.json missing from the run" in proc.stdout
    assert "2-regular: no bench result in the run" in proc.stdout
    assert {n for n, v in _junit(run).items() if v != "passed"} == {"test_provenance_present",
                                                                    "test_comparison_configurations_measured"}


def test_router_mode_runs_the_sweep_first_and_stops_on_its_error(tmp_path):
    data = tmp_path / "sharegpt.json"
    data.write_text("[]")
    run = tmp_path / "run"
    proc = _gates("--router", "http://127.0.0.1:9", "--prefill", "http://127.0.0.1:9", "--decode", "http://127.0.0.1:9",
                  "--model-path", tmp_path, "--dataset-path", data, "--run-dir", run,
                  "--sweep-args", "--wait-timeout 1 --image pdrepro-gpu:0.1.0")
    assert proc.returncode == 1
    assert "router at http://127.0.0.1:9 not healthy after 1 s" in proc.stderr
    assert "pdrepro sweep stopped (exit 2)" in proc.stdout
    assert (run / "scenario.yaml").is_file() and (tmp_path / "junit.xml").is_file() and not (run / "junit.xml").exists()
    assert "passed" not in proc.stdout.splitlines()[-1]


def test_interrupted_sweep_stops_the_gates(tmp_path):
    """Ctrl-C during `pytest repro/ --router ...`: no gates are judged on the half-swept run."""
    plugin = tmp_path / "interrupted_sweep.py"
    # The sweep command is stopped as Ctrl-C stops it (an interrupt); its stage answers 130, results kept.
    plugin.write_text("from pdrepro.commands import sweep\n\ndef interrupted(request):\n    raise KeyboardInterrupt\n\n"
                      "sweep.run = interrupted\n")
    run = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "pytest", "repro/", "-p", "no:cacheprovider", "-p", "no:xdist",
                           "-p", "interrupted_sweep", "--router", "http://127.0.0.1:9", "--run-dir", str(run),
                           "--model-path", str(tmp_path), "--dataset-path", str(tmp_path / "d.json")],
                          cwd=REPO, capture_output=True, text=True, timeout=180,
                          env={**os.environ, "PYTHONPATH": str(tmp_path)})
    assert proc.returncode == 130, proc.stdout[-2000:]
    assert "pdrepro sweep interrupted" in proc.stdout + proc.stderr
    assert "test_bandwidth" not in proc.stdout


def test_router_mode_refuses_parallel_workers(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "pytest", "repro/", "-p", "no:cacheprovider", "-n", "2",
                           "--router", "http://127.0.0.1:9", "--run-dir", str(tmp_path / "run")],
                          cwd=REPO, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 2
    assert "--router runs the sweep once, in one process: drop -n" in proc.stderr
    assert not (tmp_path / "run" / "scenario.yaml").exists()


def test_published_run_passes_under_xdist(tmp_path):
    sc = load_scenario("h20-qwen3-235b-1p1d")
    run = build_run(tmp_path / "run", sc, provenance=_provenance(sc)).root
    proc = subprocess.run([sys.executable, "-m", "pytest", "repro/", "-p", "no:cacheprovider", "-n", "2", "--run-dir", str(run),
                           f"--junitxml={tmp_path / 'junit.xml'}"], cwd=REPO, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stdout[-2000:]
    assert set(_junit(run).values()) == {"passed"} and len(_junit(run)) >= 6 * 9 + 5


def test_gates_twice_leave_the_summary_alone(tmp_path):
    """The gates' own junit.xml is an output, not an input, and lands where it is told: a second judgement finds the
    summary as analyze left it."""
    sc = load_scenario("h20-qwen3-235b-1p1d")
    run = build_run(tmp_path / "run", sc, provenance=_provenance(sc)).root
    assert pdrepro("analyze", run).rc == 0
    first = (run / "summary.json").stat().st_mtime_ns
    assert _gates("--run-dir", run).returncode == 0
    assert (tmp_path / "junit.xml").stat().st_mtime_ns > first and not (run / "junit.xml").exists()
    assert _gates("--run-dir", run).returncode == 0
    assert (run / "summary.json").stat().st_mtime_ns == first
    assert "NOTE" not in _gates("--run-dir", run).stdout  # a current summary is not called stale


def test_unknown_scenario_is_a_usage_error(tmp_path):
    sc = load_scenario("h20-qwen3-235b-1p1d")
    run = build_run(tmp_path / "run", sc).root
    proc = _gates("--run-dir", run, "--scenario", "no-such-scenario")
    assert proc.returncode == 2 and "unknown scenario 'no-such-scenario'" in proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout


def test_hand_edited_summary_stops_the_gates(tmp_path):
    sc = load_scenario("h20-qwen3-235b-1p1d")
    good = build_run(tmp_path / "good", sc, provenance=_provenance(sc)).root
    assert pdrepro("analyze", good).rc == 0 and _gates("--run-dir", good).returncode == 0
    run = build_run(tmp_path / "run", sc, provenance=_provenance(sc), transfer_factor={8192: 1.4}).root
    assert pdrepro("analyze", run).rc == 0 and _gates("--run-dir", run).returncode == 1
    passing = json.loads((good / "summary.json").read_text())
    edited = json.loads((run / "summary.json").read_text())
    edited.update(rows=passing["rows"], headline=passing["headline"])
    (run / "summary.json").write_text(json.dumps(edited))
    proc = _gates("--run-dir", run)
    assert proc.returncode not in (0, 1), proc.stdout[-2000:]
    assert "summary.json" in proc.stdout + proc.stderr


def test_empty_responses_fail_their_gate(tmp_path):
    sc = load_scenario("h20-qwen3-235b-1p1d")
    run = build_run(tmp_path / "run", sc, provenance=_provenance(sc), output_tokens={2048: 0}).root
    proc = _gates("--run-dir", run, "-rf")
    assert proc.returncode == 1
    failed = sorted(name for name, verdict in _junit(run).items() if verdict != "passed")
    assert failed == ["test_outputs_generated[L2048]"]
    assert "length 2048: generated output" in proc.stdout


def test_kv_the_nics_never_carried_fails_its_gate(tmp_path):
    sc = load_scenario("h20-qwen3-235b-1p1d")
    run = build_run(tmp_path / "run", sc, provenance=_provenance(sc), nic_share={16384: 0.0}).root
    proc = _gates("--run-dir", run, "-rf")
    assert proc.returncode == 1
    failed = sorted(name for name, verdict in _junit(run).items() if verdict != "passed")
    # The witness, and each rail the run's map names (none of them moved a byte).
    assert failed == ["test_each_rail_carries_its_share[L16384]", "test_nics_witness_the_kv[L16384]"]
    assert "length 16384: bytes the NICs moved" in proc.stdout and "TCP fallback" in proc.stdout
