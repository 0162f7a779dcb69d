"""Analysing a run built in the upstream formats from the published figures gives the published table."""

import json
import re
import shutil

import pytest
from clihelp import pdrepro
from runbuilder import build_run

from pdrepro.analysis.summarize import compute_summary, nearest_length
from pdrepro.core.errors import UserError
from pdrepro.core.units import human_bytes
from pdrepro.kinds.registry import analyze_run, load_or_analyze
from pdrepro.rundir import RunDir
from pdrepro.rundir.contract import input_errors
from pdrepro.scenario.model import load_scenario, scenario_from_dict

SCENARIO = load_scenario("h20-qwen3-235b-1p1d")
PUBLISHED = {r.prompt_len: r for r in SCENARIO.reference.rows}


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    run = build_run(tmp_path_factory.mktemp("published"), SCENARIO, metrics=True)
    return run, analyze_run(run, SCENARIO)


def test_reproduces_the_published_table_to_rounding(published):
    _, summary = published
    rows = {r["prompt_len"]: r for r in summary["rows"]}
    assert sorted(rows) == sorted(PUBLISHED)
    for L, ref in PUBLISHED.items():
        row = rows[L]
        assert human_bytes(row["kv_bytes"]) == ref.kv_size
        assert row["kv_bytes"] == L * 385_024
        assert round(row["ttft_ms_mean"], 2) == ref.ttft_ms
        assert row["transfer_ms_median"] == pytest.approx(ref.transfer_ms, abs=0.006)
        # The table's own rounding of transfer time leaves ~0.2 % on the smallest lengths.
        assert row["bandwidth_GB_s"] == pytest.approx(ref.bandwidth_GB_s, rel=0.003)
        assert row["utilization_pct"] == pytest.approx(ref.utilization_pct, abs=0.11)
        assert row["requests"] == 50 and row["request_errors"] == 0
        assert row["transfer_samples"] == 50
        assert abs(row["kv_size_mismatch_pct"]) < 0.2
    assert round(rows[32768]["transfer_share_of_ttft_pct"], 1) == 2.4
    head = summary["headline"]
    assert round(head["peak_bandwidth_GB_s"], 1) == 164.3
    assert round(head["peak_utilization_pct"], 1) == 82.2
    assert head["peak_bandwidth_prompt_len"] == 32768
    assert summary["issues"] == []


def test_writes_summary_report_and_plots(published):
    run, summary = published
    on_disk = json.loads(run.summary_file.read_text())
    assert on_disk["schema_version"] == 1
    assert on_disk["scenario"]["name"] == SCENARIO.name
    assert on_disk["source"] == "sglang" and on_disk["line_rate_GB_s"] == 200
    for key in ("prompt_len", "requests", "ttft_ms_mean", "ttft_ms_median", "ttft_ms_p99", "kv_bytes",
                "transfer_ms_median", "transfer_ms_mean", "bandwidth_GB_s", "utilization_pct",
                "transfer_share_of_ttft_pct"):
        assert all(key in r for r in on_disk["rows"]), key
    assert "12.62 GB" in run.report_file.read_text()
    csv_lines = (run.root / "summary.csv").read_text().splitlines()
    assert csv_lines[0].startswith("prompt_len,requests,") and "bandwidth_GB_s" in csv_lines[0]
    assert len(csv_lines) == 10 and csv_lines[-1].startswith("32768,50,0,")
    names = sorted(p.name for p in run.plots_dir.iterdir())
    assert names == ["bandwidth.png", "transfer-vs-size.png", "ttft-split.png"]
    assert all((run.plots_dir / n).stat().st_size > 10_000 for n in names)


def test_warm_up_request_is_not_counted(published):
    _, summary = published
    row = next(r for r in summary["rows"] if r["prompt_len"] == 128)
    # The builder's warm-up transfer is 6x slower; counted, it would pull the mean up by ~10 %.
    assert row["transfer_ms_mean"] == pytest.approx(2.07, rel=0.01)


def test_metrics_scrape_is_a_second_source(published):
    _, summary = published
    (scrape,) = summary["metrics"]
    assert scrape["file"] == "prefill.prom"
    assert scrape["transfers"] == 9 * 51
    assert 100 < scrape["bandwidth_GB_s"] < 200


def test_old_spelling_and_compact_units_give_the_same_table(tmp_path):
    a = compute_summary(build_run(tmp_path / "old", SCENARIO, old_spelling=True), SCENARIO)
    b = compute_summary(build_run(tmp_path / "compact", SCENARIO, style="compact"), SCENARIO)
    for ra, rb in zip(a["rows"], b["rows"]):
        assert ra["bandwidth_GB_s"] == pytest.approx(PUBLISHED[ra["prompt_len"]].bandwidth_GB_s, rel=0.003)
        assert rb["bandwidth_GB_s"] == pytest.approx(ra["bandwidth_GB_s"], rel=1e-9)


def test_chat_template_tokens_still_match_the_length(tmp_path):
    summary = compute_summary(build_run(tmp_path / "r", SCENARIO, tokens_off=9), SCENARIO)
    rows = {r["prompt_len"]: r for r in summary["rows"]}
    assert rows[128]["logged_input_len"] == 137 and rows[128]["transfer_samples"] == 50
    assert not input_errors(summary)
    assert nearest_length(137, [128, 256]) == 128
    assert nearest_length(190, [128, 256]) is None


def test_wrong_tp_is_flagged_as_kv_size_mismatch(tmp_path):
    summary = compute_summary(build_run(tmp_path / "r", SCENARIO, log_tp=4), SCENARIO)
    kinds = [(i["kind"], i["prompt_len"]) for i in summary["issues"]]
    assert ("kv_size_mismatch", 128) in kinds
    row = summary["rows"][0]
    assert row["kv_size_mismatch_pct"] == pytest.approx(100, abs=1)


def test_request_errors_are_counted(tmp_path):
    summary = compute_summary(build_run(tmp_path / "r", SCENARIO, errors={4096: 2}), SCENARIO)
    row = next(r for r in summary["rows"] if r["prompt_len"] == 4096)
    assert row["requests"] == 48 and row["request_errors"] == 2
    assert row["transfer_samples"] == 48
    assert any(i["kind"] == "request_errors" and "ServerDisconnectedError" in i["message"] for i in summary["issues"])


def test_dropped_length_is_an_input_error_but_the_rest_is_written(tmp_path):
    run = build_run(tmp_path / "r", SCENARIO, drop_lengths={32768})
    summary = analyze_run(run, SCENARIO)
    errors = input_errors(summary)
    assert errors and errors[0]["prompt_len"] == 32768 and "result-32768.jsonl" in errors[0]["message"]
    on_disk = json.loads(run.summary_file.read_text())
    assert [r["prompt_len"] for r in on_disk["rows"]] == [128, 256, 512, 1024, 2048, 4096, 8192, 16384]


def test_appended_bench_runs_use_the_last(tmp_path):
    summary = compute_summary(build_run(tmp_path / "r", SCENARIO, appended_runs={256}), SCENARIO)
    row = next(r for r in summary["rows"] if r["prompt_len"] == 256)
    assert round(row["ttft_ms_mean"], 2) == 125.76
    assert any(i["kind"] == "bench_notes" and i["prompt_len"] == 256 for i in summary["issues"])
    assert not input_errors(summary)


def test_summary_is_reused_until_an_input_changes(tmp_path):
    run = build_run(tmp_path / "r", SCENARIO)
    first = analyze_run(run, SCENARIO)
    stamp = run.summary_file.stat().st_mtime_ns
    assert load_or_analyze(run, SCENARIO) == json.loads(json.dumps(first))
    assert run.summary_file.stat().st_mtime_ns == stamp
    import os
    import time
    later = time.time() + 5
    os.utime(run.bench_file(128), (later, later))
    load_or_analyze(run, SCENARIO)
    # The verdict's summary is made in memory: only `pdrepro analyze` rewrites summary.json.
    assert run.summary_file.stat().st_mtime_ns == stamp


def test_comparison_scenarios_are_dispatched(tmp_path, monkeypatch):
    from pdrepro.publish import results as publish

    # The same settings as a comparison scenario: a file of that kind loads as its own model.
    comparison = scenario_from_dict({**SCENARIO.to_dict(), "kind": "comparison"}, "comparison fixture")
    monkeypatch.setattr(publish, "compute_comparison", lambda run, s: {"dispatched": s.kind})
    monkeypatch.setattr(publish, "render_comparison", lambda summary: f"{summary['dispatched']}\n")
    # A folder whose scenario.yaml records a comparison is analysed by the compare kind.
    run = RunDir(tmp_path / "c")
    run.root.mkdir()
    run.scenario_file.write_text(comparison.to_yaml())
    summary = analyze_run(run, comparison)
    assert summary["dispatched"] == "comparison"
    # Stamped with its inputs, so `check` and the gates reuse it until one changes.
    assert json.loads(run.summary_file.read_text())["inputs_signature"] == summary["inputs_signature"]
    assert run.report_file.read_text() == "comparison\n"
    # A sweep's run is what it records, whatever scenario is given: one line, never a comparison of itself.
    sweep = build_run(tmp_path / "r", SCENARIO)
    with pytest.raises(UserError, match="holds a sweep's run, but the scenario .* is a comparison"):
        analyze_run(sweep, comparison)


def test_measured_ceiling_from_baseline_reaches_the_report(tmp_path):
    run = build_run(tmp_path, SCENARIO)
    (run.root / "baseline.json").write_text(json.dumps({"baseline_GB_s": 178.64, "baseline_source": "transfer_engine_bench"}))
    summary = analyze_run(run, SCENARIO)
    assert summary["baseline_GB_s"] == 178.64
    assert "178.64 GB/s" in run.report_file.read_text()


def test_summary_is_stale_once_an_input_is_deleted(tmp_path):
    """Deleting a file makes nothing newer; the summary must still be redone (a length or provenance gone)."""
    run = build_run(tmp_path / "r", SCENARIO, provenance={"pins": {}})
    first = analyze_run(run, SCENARIO)
    assert first["provenance"] == {"pins": {}}
    (run.root / "junit.xml").write_text("<testsuites/>")  # the gates' output is not an input
    assert load_or_analyze(run, SCENARIO)["inputs_signature"] == first["inputs_signature"]
    run.provenance_file.unlink()
    assert load_or_analyze(run, SCENARIO)["provenance"] is None
    run.bench_file(512).unlink()
    assert 512 not in [r["prompt_len"] for r in load_or_analyze(run, SCENARIO)["rows"] if r["requests"] is not None]


def test_a_sweeps_summary_relabelled_smoke_without_its_inputs_is_refused(tmp_path):
    run = build_run(tmp_path / "r", SCENARIO)
    stored = analyze_run(run, SCENARIO)
    for folder in (run.bench_dir, run.logs_dir, run.counters_dir):
        shutil.rmtree(folder)
    run.summary_file.write_text(json.dumps(dict(stored, source="smoke")))
    result = pdrepro("check", run.root)
    assert result.rc == 2 and "calls itself a smoke result" in result.err and len(result.err.strip().splitlines()) == 1


def _edit_prefill(run, edit):
    lines = run.prefill_log.read_text().splitlines()
    run.prefill_log.write_text("\n".join(edit(lines)) + "\n")


def _reqstats_of(lines, L):
    return [i for i, l in enumerate(lines) if "ReqTimeStats(" in l and f"input_len={L}," in l]


def test_negative_transfer_speed_is_bad_input(tmp_path):
    run = build_run(tmp_path / "r", SCENARIO)

    def negate(lines):
        i = _reqstats_of(lines, 4096)[3]
        lines[i] = re.sub(r"transfer_speed=", "transfer_speed=-", lines[i])
        return lines
    _edit_prefill(run, negate)
    summary = compute_summary(run, SCENARIO)
    errors = input_errors(summary)
    assert any("transfer_speed=-" in e["message"] and "prefill.log" in e["message"] for e in errors), errors


def test_zero_transfer_speed_is_not_called_missing(tmp_path):
    run = build_run(tmp_path / "r", SCENARIO)

    def zero(lines):
        for i in _reqstats_of(lines, 128):
            lines[i] = re.sub(r"transfer_speed=[\d.]+", "transfer_speed=0.00", lines[i])
        return lines
    _edit_prefill(run, zero)
    summary = compute_summary(run, SCENARIO)
    messages = [i["message"] for i in summary["issues"] if i["prompt_len"] == 128]
    assert not any("carry no transfer_speed" in m for m in messages), messages
    assert any("transfer_speed=0.00" in m for m in messages), messages


def test_a_log_concatenated_with_its_rotated_copy_gives_the_same_table_with_a_note(tmp_path):
    clean = compute_summary(build_run(tmp_path / "a", SCENARIO), SCENARIO)
    run = build_run(tmp_path / "b", SCENARIO)
    _edit_prefill(run, lambda lines: lines + lines)
    doubled = compute_summary(run, SCENARIO)
    assert [r["transfer_ms_median"] for r in doubled["rows"]] == [r["transfer_ms_median"] for r in clean["rows"]]
    assert not input_errors(doubled)
    assert any(i["kind"] == "duplicate_reqstats" for i in doubled["issues"])


def test_conflicting_duplicate_request_stats_are_an_error(tmp_path):
    run = build_run(tmp_path / "r", SCENARIO)

    def conflict(lines):
        i = _reqstats_of(lines, 8192)[2]
        return lines + [re.sub(r"transfer_speed=([\d.]+)", "transfer_speed=99.99", lines[i])]
    _edit_prefill(run, conflict)
    errors = input_errors(compute_summary(run, SCENARIO))
    assert any(e["kind"] == "conflicting_reqstats" and "rid=" in e["message"] for e in errors), errors
