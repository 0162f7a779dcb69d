import json
import re

import pytest
from clihelp import assert_one_line_error, pdrepro, pdrepro_process
from runbuilder import build_run

from pdrepro.scenario.model import load_scenario

SCENARIO = load_scenario("h20-qwen3-235b-1p1d")


def test_analyze_prints_table_and_where_outputs_went(tmp_path):
    run = build_run(tmp_path / "run", SCENARIO)
    result = pdrepro_process("analyze", run.root)
    assert result.rc == 0, result.err
    assert "164.33" in result.out and "12.62 GB" in result.out
    assert f"summary: {run.summary_file}" in result.out
    assert f"report:  {run.report_file}" in result.out
    assert run.summary_file.is_file() and run.report_file.is_file()
    assert len(list(run.plots_dir.glob("*.png"))) == 3


def _rows_written(run) -> list[int]:
    return [r["prompt_len"] for r in json.loads(run.summary_file.read_text())["rows"]]


@pytest.mark.parametrize("options, needles, rows_left", [
    ({"drop_lengths": {32768}}, ["result-32768.jsonl", "missing"], 8),
    ({"empty_bench": {512}}, ["result-512.jsonl", "empty"], 9),
    ({"truncate_bench": {1024}}, ["result-1024.jsonl", "cut off"], 9),
    ({"no_reqstats": True}, ["prefill.log", "no ReqTimeStats line", "--enable-request-time-stats-logging"], 9),
])
def test_bad_inputs_give_one_line_and_keep_what_was_computed(tmp_path, options, needles, rows_left):
    run = build_run(tmp_path / "run", SCENARIO, **options)
    # Through the real entry point once: no traceback reaches the user.
    result = pdrepro_process("analyze", run.root)
    assert_one_line_error(result, "analyze", *needles)
    assert len(_rows_written(run)) == rows_left
    summary = json.loads(run.summary_file.read_text())
    # The good lengths keep their figures.
    assert summary["rows"][1]["ttft_ms_mean"] == pytest.approx(125.76)
    assert run.report_file.is_file()


def test_missing_prefill_log(tmp_path):
    run = build_run(tmp_path / "run", SCENARIO)
    run.prefill_log.unlink()
    assert_one_line_error(pdrepro("analyze", run.root), "analyze", "prefill.log", "missing")
    summary = json.loads(run.summary_file.read_text())
    assert len(summary["rows"]) == 9 and summary["rows"][0]["bandwidth_GB_s"] is None


def test_lengths_not_in_the_scenario(tmp_path):
    run = build_run(tmp_path / "run", SCENARIO)
    run.bench_file(65536).write_text(run.bench_file(32768).read_text())
    line = assert_one_line_error(pdrepro("analyze", run.root), "analyze", "result-65536.jsonl", "65536", "--scenario")
    assert "h20-qwen3-235b-1p1d" in line
    assert _rows_written(run) == list(SCENARIO.sweep.prompt_lens)


def test_scenario_with_unknown_key(tmp_path):
    run = build_run(tmp_path / "run", SCENARIO)
    text = run.scenario_file.read_text().replace("  prefill_tp: 8\n", "  prefill_tp: 8\n  prefil_dp: 2\n")
    run.scenario_file.write_text(text)
    assert_one_line_error(pdrepro("analyze", run.root), "analyze", str(run.scenario_file), "parallel.prefil_dp")
    assert not run.summary_file.exists()


def test_no_run_directory_and_no_scenario(tmp_path):
    assert_one_line_error(pdrepro("analyze", tmp_path / "nope", "--scenario", SCENARIO.name), "analyze", "nope")
    (tmp_path / "bare").mkdir()
    assert_one_line_error(pdrepro("analyze", tmp_path / "bare"), "analyze", "--scenario")


def test_length_the_sweep_failed_says_why_and_how_to_retry(tmp_path):
    run = build_run(tmp_path / "run", SCENARIO, drop_lengths={32768})
    (run.root / "sweep-state.json").write_text(json.dumps({"lengths": {
        "16384": {"status": "done"},
        "32768": {"status": "failed", "reason": "timed out: bench client ran past 1800 s"}}, "events": []}))
    line = assert_one_line_error(pdrepro("analyze", run.root), "analyze", "result-32768.jsonl",
                                 "sweep recorded prompt length 32768 as failed", "ran past 1800 s", "same --out")
    assert "run the sweep for it" not in line


def test_another_lengths_bench_run_is_never_reported_under_this_length(tmp_path):
    run = build_run(tmp_path / "run", SCENARIO)
    run.bench_file(1024).write_text(run.bench_file(2048).read_text())
    assert_one_line_error(pdrepro("analyze", run.root), "analyze", "result-1024.jsonl", "no run of prompt length 1024",
                          "input length 2048")
    row = next(r for r in json.loads(run.summary_file.read_text())["rows"] if r["prompt_len"] == 1024)
    assert row["ttft_ms_mean"] is None


def test_cut_off_run_after_an_older_complete_one_is_bad_input(tmp_path):
    run = build_run(tmp_path / "run", SCENARIO)
    complete = run.bench_file(1024).read_text()
    run.bench_file(1024).write_text(complete + complete[: len(complete) // 3])
    assert_one_line_error(pdrepro("analyze", run.root), "analyze", "result-1024.jsonl", "cut off")


def test_a_damaged_output_lens_is_bad_input_naming_the_file_and_field(tmp_path):
    run = build_run(tmp_path / "run", SCENARIO)
    obj = json.loads(run.bench_file(1024).read_text())
    obj["output_lens"][3] = "1"
    run.bench_file(1024).write_text(json.dumps(obj) + "\n")
    assert_one_line_error(pdrepro("analyze", run.root), "analyze", "result-1024.jsonl", "'output_lens' entry 3 is '1'")
    rows = {r["prompt_len"]: r for r in json.loads(run.summary_file.read_text())["rows"]}
    # The other lengths are still measured.
    assert rows[2048]["output_tokens_min"] == SCENARIO.sweep.output_len


def test_nan_in_a_metrics_scrape_is_named_and_left_out(tmp_path):
    # /metrics is the optional second source: a broken scrape is a warning naming it, the table still stands.
    run = build_run(tmp_path / "run", SCENARIO, metrics=True)
    prom = next(run.metrics_dir.glob("*.prom"))
    prom.write_text(re.sub(r"(kv_transfer_latency_ms_sum\{[^}]*\}) \S+", r"\1 NaN", prom.read_text()))
    result = pdrepro("analyze", run.root)
    assert result.rc == 0 and "Traceback" not in result.err
    summary = json.loads(run.summary_file.read_text())
    assert summary["metrics"] == []
    assert any(i["kind"] == "metrics_unreadable" and prom.name in i["message"] and "NaN" in i["message"]
               for i in summary["issues"])


def test_nan_reaching_the_summary_is_one_line_naming_the_figure(tmp_path):
    from pdrepro.analysis.summarize import compute_summary
    from pdrepro.core.errors import UserError
    from pdrepro.publish.results import write_outputs

    run = build_run(tmp_path / "run", SCENARIO)
    summary = compute_summary(run, SCENARIO)
    summary["rows"][2]["ttft_ms_mean"] = float("nan")
    with pytest.raises(UserError) as info:
        write_outputs(run, summary)
    message = str(info.value)
    assert "summary.json" in message and "rows[2].ttft_ms_mean" in message and "\n" not in message


def test_read_only_run_directory_says_summary_cannot_be_written(tmp_path, monkeypatch):
    import tempfile
    from pathlib import Path

    from pdrepro.core import safewrite

    run = build_run(tmp_path / "run", SCENARIO)
    real = tempfile.mkstemp

    def read_only(*args, dir=None, **kwargs):
        # What the kernel answers for a file in a folder the user may not write (as root, chmod would not do it):
        # the safe writer's first step there, its temporary file, is refused.
        if dir is not None and (run.root == Path(dir) or run.root in Path(dir).parents):
            raise PermissionError(13, "Permission denied", str(dir))
        return real(*args, dir=dir, **kwargs)
    monkeypatch.setattr(safewrite.tempfile, "mkstemp", read_only)
    line = assert_one_line_error(pdrepro("analyze", run.root), "analyze", "summary.json", "cannot be written",
                                 "Permission denied")
    assert "writable" in line


def test_nan_ceiling_in_baseline_json_is_one_line(tmp_path):
    run = build_run(tmp_path / "run", SCENARIO)
    (run.root / "baseline.json").write_text('{"baseline_GB_s": NaN}\n')
    assert_one_line_error(pdrepro("analyze", run.root), "analyze", "baseline.json", "nan")


def test_a_directory_where_a_log_file_belongs_is_not_called_missing(tmp_path):
    run = build_run(tmp_path / "run", SCENARIO)
    run.prefill_log.unlink()
    run.prefill_log.mkdir()
    line = assert_one_line_error(pdrepro("analyze", run.root), "analyze", "prefill.log", "is a directory")
    assert "missing" not in line


def test_a_file_where_the_bench_folder_belongs_is_not_called_missing(tmp_path):
    run = build_run(tmp_path / "run", SCENARIO)
    import shutil
    shutil.rmtree(run.bench_dir)
    run.bench_dir.write_text("")
    line = assert_one_line_error(pdrepro("analyze", run.root), "analyze", "bench", "is a file, not a directory")
    assert "missing" not in line


def test_a_file_given_as_the_run_directory_is_named_as_such(tmp_path):
    not_a_run = tmp_path / "run.tar"
    not_a_run.write_text("")
    line = assert_one_line_error(pdrepro("analyze", not_a_run, "--scenario", "h20-qwen3-235b-1p1d"), "analyze",
                                 "run.tar", "is a file, not a directory")
    assert "no such" not in line


def test_a_directory_given_as_the_scenario_is_named_as_such(tmp_path):
    run = build_run(tmp_path / "run", SCENARIO)
    run.scenario_file.unlink()
    run.scenario_file.mkdir()
    line = assert_one_line_error(pdrepro("analyze", run.root), "analyze", "scenario.yaml", "is a directory")
    assert "has no" not in line
