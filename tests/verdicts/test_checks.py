from runbuilder import build_run, sweep_provenance

from pdrepro.analysis.summarize import compute_summary
from pdrepro.scenario.model import load_scenario
from pdrepro.verdicts.gates import evaluate, failed

SCENARIO = load_scenario("h20-qwen3-235b-1p1d")


def _failures(tmp_path, **kw):
    kw.setdefault("provenance", sweep_provenance(SCENARIO))
    summary = compute_summary(build_run(tmp_path / "r", SCENARIO, **kw), SCENARIO)
    return evaluate(summary, SCENARIO)


def test_published_run_passes_every_check(tmp_path):
    results = _failures(tmp_path)
    assert len(results) > 9 * 7
    assert failed(results) == []
    names = {r.name for r in results}
    assert {"min_bandwidth", "max_ttft", "max_transfer_share", "completed", "request_errors", "peak_bandwidth",
            "peak_utilization", "bandwidth_within_line_rate", "ttft_positive", "length_present", "logs_readable",
            "kv_size_match"} <= names


def test_doubled_transfer_time_at_32k_fails_bandwidth_there_only(tmp_path):
    bad = failed(_failures(tmp_path, transfer_factor={32768: 2.0}))
    assert bad
    assert {r.prompt_len for r in bad} == {32768}
    assert "min_bandwidth" in {r.name for r in bad}
    mb = next(r for r in bad if r.name == "min_bandwidth")
    assert mb.figure < mb.bound == 131.5 and mb.unit == "GB/s" and "32768" in mb.detail


def test_slow_ttft_fails_max_ttft(tmp_path):
    bad = failed(_failures(tmp_path, ttft_factor={2048: 1.5}))
    assert [(r.name, r.prompt_len) for r in bad] == [("max_ttft", 2048)]


def test_request_errors_fail_completion_and_errors(tmp_path):
    bad = failed(_failures(tmp_path, errors={512: 1}))
    assert {(r.name, r.prompt_len) for r in bad} == {("completed", 512), ("request_errors", 512)}


def test_impossible_bandwidth_above_line_rate(tmp_path):
    bad = failed(_failures(tmp_path, transfer_factor={16384: 0.2}))
    assert ("bandwidth_within_line_rate", 16384) in {(r.name, r.prompt_len) for r in bad}


def test_missing_length_and_log_without_stats(tmp_path):
    bad = failed(_failures(tmp_path / "a", drop_lengths={8192}))
    assert ("length_present", 8192) in {(r.name, r.prompt_len) for r in bad}
    bad = failed(_failures(tmp_path / "b", no_reqstats=True))
    names = {r.name for r in bad}
    assert "logs_readable" in names and "min_bandwidth" in names
    assert all(r.figure is None for r in bad if r.name == "min_bandwidth")


def test_wrong_tp_fails_kv_size_match(tmp_path):
    bad = failed(_failures(tmp_path, log_tp=2))
    assert {r.name for r in bad} == {"kv_size_match"}
    assert len(bad) == 9


def test_smoke_summary_without_ttft_skips_ttft_checks():
    summary = {"schema_version": 1, "scenario": {"name": SCENARIO.name}, "scenario_fingerprint": SCENARIO.fingerprint,
               "source": "smoke", "line_rate_GB_s": 200.0, "issues": [], "headline": {},
               "rows": [{"prompt_len": L, "bandwidth_GB_s": 150.0, "ttft_ms_mean": None} for L in SCENARIO.sweep.prompt_lens]}
    results = evaluate(summary, SCENARIO)
    assert not any(r.name in ("max_ttft", "ttft_positive", "max_transfer_share") for r in results)
    assert any(r.name == "min_bandwidth" and r.passed for r in results)
    # Peak figures are missing from the headline: they fail rather than pass silently.
    assert {r.name for r in failed(results)} == {"peak_bandwidth", "peak_utilization"}


def test_comparison_summary_is_judged_on_completeness():
    comparison = load_scenario("a10-qwen25-7b-rate1")
    names = list(comparison.reference.configurations)
    n = comparison.sweep.num_prompts
    prov = {"pins": {"sglang_commit": "a" * 40, "mooncake_commit": "b" * 40}, "host": {"hostname": "h"},
            "environment": {}, "scenario": {"name": comparison.name}, "endpoints": {"router": "http://r:8000"}}
    summary = {"schema_version": 1, "scenario": {"name": comparison.name}, "scenario_fingerprint": comparison.fingerprint,
               "source": "sglang", "kind": "comparison", "rows": [], "issues": [], "configurations": {
                   names[0]: {"measured": {"prompt_len": 8192, "completed": n, "errors": 0}},
                   names[1]: {"measured": {"prompt_len": 8192, "completed": n - 2, "errors": 2}},
               }, "provenance": {names[0]: prov, names[1]: prov}}
    bad = failed(evaluate(summary, comparison))
    assert {(r.name, r.prompt_len) for r in bad} == {("completed", 8192), ("request_errors", 8192)}
    assert all(names[1] in r.detail for r in bad)
    summary["configurations"][names[1]]["measured"] = None
    assert [r.name for r in failed(evaluate(summary, comparison))] == ["configuration_present"]
    # A configuration without its provenance.json fails in `check` and the gates alike.
    summary["provenance"] = {names[0]: prov}
    missing = [r.detail for r in failed(evaluate(summary, comparison)) if r.name == "provenance_present"]
    assert missing == [f"{names[1]}/provenance.json missing from the run; `pdrepro sweep` writes it"]


def test_responses_without_tokens_fail_by_name(tmp_path):
    """HTTP 200 for every request, yet nothing generated (a KV transfer that never arrived)."""
    bad = failed(_failures(tmp_path, output_tokens={4096: 0}))
    assert [(r.name, r.prompt_len) for r in bad] == [("output_tokens", 4096)]
    assert bad[0].figure == 0 and bad[0].bound == 128 and "tokens" in bad[0].detail


def test_outputs_short_of_the_requested_length_fail(tmp_path):
    bad = failed(_failures(tmp_path, output_tokens={512: 17}))
    assert [(r.name, r.prompt_len) for r in bad] == [("output_tokens", 512)]
    assert bad[0].figure == 17


def test_output_shortfall_is_seen_without_output_details(tmp_path):
    bad = failed(_failures(tmp_path, output_tokens={512: 0}, output_details=False))
    assert ("output_tokens", 512) in [(r.name, r.prompt_len) for r in bad]


def test_ttft_shorter_than_the_kv_transfer_fails_in_every_scenario(tmp_path):
    """Issue 15, 7: the first token comes after the KV arrived; whatever bounds a scenario sets (here none)."""
    from pdrepro.scenario.sections import Thresholds

    loose = SCENARIO.with_thresholds(Thresholds(min_nic_kv_share_pct=0.0))
    run = build_run(tmp_path / "r", loose, ttft_factor={4096: 0.02}, provenance=sweep_provenance(loose))
    summary = compute_summary(run, loose)
    bad = failed(evaluate(summary, loose))
    assert [(r.name, r.prompt_len) for r in bad] == [("ttft_covers_transfer", 4096)], bad
    assert "4096" in bad[0].detail and "ms" in bad[0].detail
    assert "ttft_covers_transfer" in {r.name for r in failed(evaluate(summary, SCENARIO))}
