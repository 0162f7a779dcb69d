"""What a verdict may rest on: the run's own raw inputs, judged by the scenario it ran with (issue 15, 1-2)."""

import json
import shutil

import yaml
from clihelp import assert_one_line_error, pdrepro
from runbuilder import build_run, sweep_provenance

from pdrepro.scenario.model import load_scenario

SCENARIO = load_scenario("h20-qwen3-235b-1p1d")


def _provenance(scenario=SCENARIO):
    # As the sweep records it (the full pins, what each server ran, the proof): a gated run must show what ran.
    return sweep_provenance(scenario)


def _passing_run(tmp_path, **kw):
    run = build_run(tmp_path / "run", SCENARIO, provenance=_provenance(), **kw)
    assert pdrepro("check", run.root).rc == 0
    assert not run.summary_file.exists()  # check judges in memory; only analyze writes the summary
    assert pdrepro("analyze", run.root).rc == 0
    return run


def test_a_summary_without_the_raw_inputs_is_no_verdict(tmp_path):
    run = _passing_run(tmp_path)
    shutil.rmtree(run.bench_dir)
    shutil.rmtree(run.logs_dir)
    error = assert_one_line_error(pdrepro("check", run.root), "check", "bench", "logs")
    assert "summary" in error


def test_a_summary_restamped_with_the_current_signature_is_still_no_verdict(tmp_path):
    from pdrepro.rundir import RunDir

    run = _passing_run(tmp_path)
    shutil.rmtree(run.bench_dir)
    shutil.rmtree(run.logs_dir)
    summary = json.loads(run.summary_file.read_text())
    summary["inputs_signature"] = RunDir(run.root).inputs_signature()
    run.summary_file.write_text(json.dumps(summary))
    assert_one_line_error(pdrepro("check", run.root), "check", "bench")


def test_the_gates_refuse_a_summary_alone(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    run = _passing_run(tmp_path)
    shutil.rmtree(run.bench_dir)
    shutil.rmtree(run.logs_dir)
    repo = Path(__file__).resolve().parents[2]
    proc = subprocess.run([sys.executable, "-m", "pytest", "repro/", "-p", "no:cacheprovider", "-p", "no:xdist",
                           "--run-dir", str(run.root)], cwd=repo, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "bench" in proc.stdout + proc.stderr


def test_a_smoke_summary_inside_a_real_run_is_bad_input(tmp_path):
    run = _passing_run(tmp_path)
    summary = json.loads(run.summary_file.read_text())
    summary["source"] = "smoke"
    run.summary_file.write_text(json.dumps(summary))
    shutil.rmtree(run.bench_dir)
    shutil.rmtree(run.logs_dir)
    assert_one_line_error(pdrepro("check", run.root), "check", "summary.json", "smoke")


def test_a_smoke_summary_next_to_bench_results_is_bad_input(tmp_path):
    run = _passing_run(tmp_path)
    summary = json.loads(run.summary_file.read_text())
    summary["source"] = "smoke"
    run.summary_file.write_text(json.dumps(summary))
    assert_one_line_error(pdrepro("check", run.root), "check", "summary.json", "smoke")


def test_a_comparison_summary_in_a_sweep_run_is_bad_input(tmp_path):
    run = _passing_run(tmp_path)
    summary = json.loads(run.summary_file.read_text())
    summary["kind"] = "comparison"
    # A comparison's provenance names its configurations, not one sweep's record version: without this key the
    # file reads as a comparison's summary (one that does not read as any summary is noted and judged from inputs).
    summary["provenance"].pop("schema_version", None)
    run.summary_file.write_text(json.dumps(summary))
    assert_one_line_error(pdrepro("check", run.root), "check", "summary.json", "comparison")


def test_scenario_changed_after_the_sweep_is_bad_input(tmp_path):
    run = _passing_run(tmp_path)
    data = yaml.safe_load(run.scenario_file.read_text())
    data["thresholds"]["min_peak_bandwidth_GB_s"] = 1.0
    run.scenario_file.write_text(yaml.safe_dump(data, sort_keys=False))
    assert_one_line_error(pdrepro("check", run.root), "check", "scenario.yaml", "provenance.json")


def test_the_gates_refuse_a_scenario_changed_after_the_sweep(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    run = _passing_run(tmp_path)
    data = yaml.safe_load(run.scenario_file.read_text())
    data["thresholds"]["max_transfer_share_pct"] = 50.0
    run.scenario_file.write_text(yaml.safe_dump(data, sort_keys=False))
    repo = Path(__file__).resolve().parents[2]
    proc = subprocess.run([sys.executable, "-m", "pytest", "repro/", "-p", "no:cacheprovider", "-p", "no:xdist",
                           "--run-dir", str(run.root)], cwd=repo, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 2, proc.stdout[-2000:]
    assert "scenario.yaml" in proc.stdout + proc.stderr


def test_another_scenario_lists_every_bound_it_changes(tmp_path):
    run = _passing_run(tmp_path)
    data = SCENARIO.to_dict()
    data["thresholds"]["min_bandwidth_GB_s"][32768] = 10.0       # loosened
    data["thresholds"]["max_ttft_ms"][128] = 100.0               # tightened
    data["thresholds"]["min_peak_utilization_pct"] = None        # removed
    other = tmp_path / "other.yaml"
    other.write_text(yaml.safe_dump(data, sort_keys=False))
    result = pdrepro("check", run.root, "--scenario", other)
    lines = [l for l in result.out.splitlines() if l.startswith("BOUND ")]
    assert any("min_bandwidth_GB_s[32768]" in l and "loosened" in l and "131.5" in l and "10" in l for l in lines), lines
    assert any("max_ttft_ms[128]" in l and "tightened" in l for l in lines), lines
    assert any("min_peak_utilization_pct" in l and "removed" in l for l in lines), lines
    assert len(lines) == 3, lines


def test_a_thresholds_file_lists_what_it_loosens(tmp_path):
    run = _passing_run(tmp_path)
    loose = tmp_path / "loose.yaml"
    loose.write_text("thresholds:\n  max_transfer_share_pct: 50\n")
    result = pdrepro("check", run.root, "--thresholds", loose)
    assert result.rc == 0
    lines = [l for l in result.out.splitlines() if l.startswith("BOUND ")]
    assert lines and "max_transfer_share_pct" in lines[0] and "loosened" in lines[0] and "5" in lines[0]


def test_the_runs_own_scenario_lists_no_bounds(tmp_path):
    run = _passing_run(tmp_path)
    result = pdrepro("check", run.root, "--scenario", SCENARIO.name)
    assert result.rc == 0 and "BOUND " not in result.out


def test_verdict_warnings_are_printed_by_check(tmp_path):
    run = build_run(tmp_path / "run", SCENARIO, provenance=_provenance(), nic_share={1024: 3.0})
    result = pdrepro("check", run.root)
    assert any(l.startswith("WARN ") and "1024" in l and "other traffic" in l for l in result.out.splitlines()), result.out


def test_another_lengths_counter_record_is_bad_input(tmp_path):
    run = build_run(tmp_path / "run", SCENARIO, provenance=_provenance())
    shutil.copy(run.counters_file(256), run.counters_file(512))
    assert_one_line_error(pdrepro("check", run.root), "check", "counters/512.json", "256")


def _gates(*args):
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    return subprocess.run([sys.executable, "-m", "pytest", "repro/", "-p", "no:cacheprovider", "-p", "no:xdist",
                           *map(str, args)], cwd=repo, capture_output=True, text=True, timeout=180)


def test_the_gates_list_the_bounds_a_thresholds_file_changes(tmp_path):
    run = _passing_run(tmp_path)
    loose = tmp_path / "loose.yaml"
    loose.write_text("thresholds:\n  max_transfer_share_pct: 50\n")
    proc = _gates("--run-dir", run.root, "--thresholds", loose)
    assert proc.returncode == 0, proc.stdout[-2000:]
    assert any(l.startswith("BOUND max_transfer_share_pct: loosened") for l in proc.stdout.splitlines()), proc.stdout[-2000:]


def test_the_gates_judge_a_run_without_its_scenario_only_when_told_which(tmp_path):
    run = _passing_run(tmp_path)
    run.scenario_file.unlink()
    proc = _gates("--run-dir", run.root)
    assert proc.returncode == 2 and "--scenario" in proc.stdout + proc.stderr, proc.stdout[-2000:]
    assert _gates("--run-dir", run.root, "--scenario", SCENARIO.name).returncode == 0


def test_a_run_without_its_counters_is_no_verdict(tmp_path):
    # The witness would only say "not measured" and fail: the run is incomplete, which is bad input.
    run = _passing_run(tmp_path)
    shutil.rmtree(run.counters_dir)
    assert_one_line_error(pdrepro("check", run.root), "check", "counters/", "incomplete")


def test_a_length_without_its_counter_record_is_named(tmp_path):
    run = _passing_run(tmp_path)
    (run.counters_dir / "8192.json").unlink()
    error = assert_one_line_error(pdrepro("check", run.root), "check", "counters/8192.json")
    assert "length 8192" in error


def test_bench_results_without_the_server_logs_is_no_verdict(tmp_path):
    run = _passing_run(tmp_path)
    shutil.rmtree(run.logs_dir)
    assert_one_line_error(pdrepro("check", run.root), "check", "logs/", "server logs")
