"""The A10 comparison scenarios and their two-configuration report."""

import json

import pytest
from clihelp import assert_one_line_error, pdrepro_process

from pdrepro.core.errors import UserError
from pdrepro.kinds.registry import analyze_run
from pdrepro.rundir import RunDir
from pdrepro.scenario.model import load_scenario

PUBLISHED = {
    "a10-qwen25-7b-rate1": (4, 8192, 50, 1.0, 7.23, 10.30),
    "a10-qwen25-7b-rate4": (2, 2048, 200, 4.0, 17.06, 25.74),
}


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_shipped_a10_scenarios(name):
    tp, length, prompts, rate, itl_pd, itl_regular = PUBLISHED[name]
    sc = load_scenario(name)
    assert sc.kind == "comparison"
    assert (sc.parallel.prefill_tp, sc.sweep.prompt_lens, sc.sweep.num_prompts, sc.sweep.request_rate) == \
        (tp, (length,), prompts, rate)
    assert sc.sweep.output_len == 512 and sc.sweep.max_concurrency is None
    assert sc.model.name == "Qwen2.5-7B-Instruct-GPTQ-Int4"
    # 28 layers x K and V x 4 KV heads x 128 x 2 B (fp16), summed over the ranks.
    assert sc.kv_bytes_per_token == 28 * 2 * 4 * 128 * 2
    assert sorted(sc.reference.configurations) == ["1P1D", "2-regular"]
    assert sc.reference.configurations["1P1D"]["mean_itl_ms"] == itl_pd
    assert sc.reference.configurations["2-regular"]["mean_itl_ms"] == itl_regular


def _bench(path, figures, completed):
    path.parent.mkdir(parents=True, exist_ok=True)
    obj = {"completed": completed, "duration": 50.0, "output_throughput": figures["output_tok_s"],
           "total_throughput": figures["total_tok_s"], "mean_e2e_latency_ms": figures["mean_e2e_ms"],
           "mean_ttft_ms": figures["mean_ttft_ms"], "p99_ttft_ms": figures["p99_ttft_ms"],
           "mean_itl_ms": figures["mean_itl_ms"], "p99_itl_ms": figures["p99_itl_ms"], "median_ttft_ms": 1.0}
    path.write_text(json.dumps(obj) + "\n")


def _run_as_published(tmp_path, sc, only=None):
    for name, figures in sc.reference.configurations.items():
        if only and name not in only:
            continue
        _bench(tmp_path / name / "bench" / f"result-{sc.sweep.prompt_lens[0]}.jsonl", figures, sc.sweep.num_prompts)
    (tmp_path / "scenario.yaml").write_text(sc.to_yaml())
    return RunDir(tmp_path)


def test_report_sets_configurations_side_by_side(tmp_path):
    sc = load_scenario("a10-qwen25-7b-rate1")
    summary = analyze_run(_run_as_published(tmp_path, sc), sc)
    change = summary["comparison"]["change_pct"]["mean_itl_ms"]
    # Published: 1P1D's mean ITL is about 30 % below two regular instances'.
    assert change["measured_pct"] == pytest.approx(100 * (7.23 - 10.30) / 10.30)
    assert change["published_pct"] == pytest.approx(change["measured_pct"])
    report = (tmp_path / "report.md").read_text()
    assert "| Mean ITL (ms)" in report and "7.23" in report and "10.30" in report and "-29.8 %" in report
    assert "Output token throughput (tok/s)" in report and "P99 TTFT (ms)" in report
    assert json.loads((tmp_path / "summary.json").read_text())["configurations"]["2-regular"]["measured"]["p99_itl_ms"] == 12.73


def test_the_summary_is_written_once_already_stamped(tmp_path, monkeypatch):
    import os

    sc = load_scenario("a10-qwen25-7b-rate1")
    run = _run_as_published(tmp_path, sc)
    written = []
    replace = os.replace
    monkeypatch.setattr(os, "replace", lambda src, dst: (written.append(os.path.basename(dst)), replace(src, dst)))
    summary = analyze_run(run, sc)
    assert sorted(written) == ["report.md", "summary.json"]
    stored = json.loads(run.summary_file.read_text())
    assert stored["inputs_signature"] == summary["inputs_signature"] == run.inputs_signature()
    assert stored["analysis_code"] == summary["analysis_code"]


def test_one_configuration_missing_is_an_issue_not_a_crash(tmp_path):
    sc = load_scenario("a10-qwen25-7b-rate4")
    summary = analyze_run(_run_as_published(tmp_path, sc, only={"1P1D"}), sc)
    assert summary["configurations"]["2-regular"]["measured"] is None
    assert any("--configuration 2-regular" in i["message"] for i in summary["issues"])
    assert "n/a" in (tmp_path / "report.md").read_text()


def test_no_results_at_all_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="--configuration 1P1D"):
        analyze_run(RunDir(tmp_path), load_scenario("a10-qwen25-7b-rate1"))


def test_analyze_command_dispatches_comparison(tmp_path):
    sc = load_scenario("a10-qwen25-7b-rate4")
    _run_as_published(tmp_path, sc)
    proc = pdrepro_process("analyze", tmp_path)
    assert proc.rc == 0, proc.err
    assert "294.89" in (tmp_path / "report.md").read_text()


def test_unreadable_configuration_keeps_the_other_and_exits_2(tmp_path):
    sc = load_scenario("a10-qwen25-7b-rate1")
    run = _run_as_published(tmp_path, sc)
    cut = tmp_path / "2-regular" / "bench" / "result-8192.jsonl"
    cut.write_text(cut.read_text()[:40])  # the client was killed mid-write
    assert_one_line_error(pdrepro_process("analyze", tmp_path), "analyze", "2-regular", str(cut))
    summary = json.loads(run.summary_file.read_text())
    assert summary["configurations"]["1P1D"]["measured"]["mean_itl_ms"] == 7.23
    assert summary["configurations"]["2-regular"]["measured"] is None
    cut.write_text("")
    (tmp_path / "1P1D" / "bench" / "result-8192.jsonl").unlink()
    with pytest.raises(UserError, match="2-regular.*empty"):
        analyze_run(run, sc)


def test_hand_edited_comparison_summary_is_an_error_naming_it(tmp_path):
    sc = load_scenario("a10-qwen25-7b-rate1")
    run = _run_as_published(tmp_path, sc)
    (tmp_path / "2-regular" / "bench" / f"result-{sc.sweep.prompt_lens[0]}.jsonl").write_text(
        json.dumps({**json.loads((tmp_path / "2-regular" / "bench" / f"result-{sc.sweep.prompt_lens[0]}.jsonl").read_text()),
                    "completed": 12}) + "\n")
    from clihelp import pdrepro

    assert pdrepro("check", tmp_path).rc == 1  # 12 of 50 completed
    assert pdrepro("analyze", tmp_path).rc == 0  # only analyze writes the summary
    summary = json.loads(run.summary_file.read_text())
    summary["configurations"]["2-regular"]["measured"]["completed"] = sc.sweep.num_prompts
    run.summary_file.write_text(json.dumps(summary))
    assert_one_line_error(pdrepro("check", tmp_path), "check", "summary.json", "pdrepro analyze")
