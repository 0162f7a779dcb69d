"""The analysis of a real run's raw files (tests/recorded/h200-onebox-sglang-0.5.15.post1/, see its
SOURCE) gives the table that run recorded, and reads the upstream quirks that run showed: health
checks and warm-ups in the request stats, `transfer_speed=0.00` with a non-zero `transfer_total`,
the bench client's `Infinity`, and /metrics scrapes that must agree with the logs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pdrepro.analysis.summarize import compute_summary, nearest_length
from pdrepro.parsers.bench import parse_bench_file
from pdrepro.parsers.prom import parse_metrics_file
from pdrepro.parsers.reqstats import parse_log
from pdrepro.report.markdown import measured_table
from pdrepro.rundir import RunDir
from pdrepro.scenario.model import load_scenario

RECORDED = Path(__file__).resolve().parents[1] / "recorded" / "h200-onebox-sglang-0.5.15.post1"
LENGTHS = (128, 1024, 4096, 16384)


@pytest.fixture(scope="module")
def fresh() -> dict:
    # compute_summary writes nothing, so the recorded folder itself is read.
    summary = compute_summary(RunDir(RECORDED), load_scenario(RECORDED / "scenario.yaml"))
    return json.loads(json.dumps(summary))


def _recorded_summary() -> dict:
    return json.loads((RECORDED / "summary.json").read_text())


def test_the_raw_files_give_the_recorded_rows_to_the_digit(fresh):
    # Today's rows add keys the recording predates (logged_requests, what the prefill logs hold after the
    # warm-up): every recorded key agrees to the digit, and the log holds every request the client completed.
    recorded_rows = _recorded_summary()["rows"]
    assert [{k: r[k] for k in old if k in r} for r, old in zip(fresh["rows"], recorded_rows)] == recorded_rows
    assert all(r["logged_requests"] == r["requests"] for r in fresh["rows"])
    assert [r["prompt_len"] for r in fresh["rows"]] == list(LENGTHS)
    # The table as the run's report printed it.
    recorded = (RECORDED / "report.md").read_text()
    assert measured_table(fresh) in recorded
    # What the README states: 0.33 GB/s at 128 tokens, 1.43 at 4096, KV sizes within 0.00 %.
    rows = {r["prompt_len"]: r for r in fresh["rows"]}
    assert f"{rows[128]['bandwidth_GB_s']:.2f} {rows[4096]['bandwidth_GB_s']:.2f}" == "0.33 1.43"
    assert all(r["kv_size_mismatch_pct"] == 0.0 for r in rows.values())


def _prefill_stats():
    return parse_log(RECORDED / "logs" / "prefill.log").stats


def test_health_checks_and_the_servers_own_warm_up_are_left_out_as_recorded(fresh):
    stats = _prefill_stats()
    health = [s for s in stats if s.is_health_check]
    assert len(health) == 5 and all(s.input_len == 1 and s.transfer_total_MiB == 0 for s in health)
    # Two 4-token requests match no length: the server's own warm-up (bootstrap room 0, sent to
    # itself before /health) and the one request pd.sh sent through the router by hand. Only the
    # second is traffic a user should hear about; the recording (older code) warned of both.
    stray = [s for s in stats if not s.is_health_check and nearest_length(s.input_len, list(LENGTHS)) is None]
    assert [(s.input_len, s.is_server_warmup) for s in stray] == [(4, True), (4, False)]
    assert not any(s.is_server_warmup for s in stats if nearest_length(s.input_len, list(LENGTHS)))
    # (The run predates the pins comparison, which adds its own warning: test_whatran.py.)
    kinds = [(i["kind"], i["severity"]) for i in fresh["issues"] if i["kind"] != "pins_differ"]
    assert kinds == [(i["kind"], i["severity"]) for i in _recorded_summary()["issues"]] == [
        ("unmatched_requests", "warning")]
    assert "2 prefill request(s) match no prompt length" in _recorded_summary()["issues"][0]["message"]
    assert "1 prefill request(s) match no prompt length" in fresh["issues"][0]["message"]
    # The bench client's warm-up (1 per length) is logged and dropped: 11 logged, 10 measured.
    for L in LENGTHS:
        logged = [s for s in stats if not s.is_health_check and nearest_length(s.input_len, list(LENGTHS)) == L]
        assert len(logged) == 11
    assert all(r["transfer_samples"] == 10 for r in fresh["rows"])


def test_zero_speed_with_a_non_zero_total_is_not_measured_and_not_a_length_error(fresh):
    zero = [s for s in _prefill_stats() if s.transfer_speed_GiB_s == 0 and s.transfer_total_MiB]
    # One such line: the routed 4-token request (0.05 MiB), too quick for its speed to print.
    assert [(s.input_len, s.transfer_total_MiB) for s in zero] == [(4, 0.05)]
    assert zero[0].transfer_s is None
    assert not any(i["kind"] == "zero_transfer_speed" for i in fresh["issues"])


def test_the_bench_files_infinity_request_rate_is_read():
    for L in LENGTHS:
        path = RECORDED / "bench" / f"result-{L}.jsonl"
        assert '"request_rate": Infinity' in path.read_text()
        result, notes = parse_bench_file(path, L, 10, 32)
        assert result.completed == 10 and len(result.ttfts_s) == 10 and result.ok_output_lens == (32,) * 10
        assert notes == []
    # Python's JSON reader takes the non-standard token; it is the open loop the scenario asked for.
    record = json.loads((RECORDED / "bench" / "result-128.jsonl").read_text().splitlines()[0])
    assert record["request_rate"] == float("inf") == load_scenario(RECORDED / "scenario.yaml").sweep.request_rate


@pytest.mark.parametrize("L", LENGTHS)
def test_metrics_scrapes_agree_with_the_logs(L):
    logged = [s for s in _prefill_stats() if not s.is_health_check and nearest_length(s.input_len, list(LENGTHS)) == L]
    per_length = parse_metrics_file(RECORDED / "metrics" / f"prefill-{L}.prom")
    before = parse_metrics_file(RECORDED / "metrics" / "raw" / f"prefill-before-{L}.prom")
    after = parse_metrics_file(RECORDED / "metrics" / "raw" / f"prefill-after-{L}.prom")
    for name in ("latency_ms", "total_mb"):
        # The per-length file is the difference of the scrapes around the length.
        assert per_length[name].count == after[name].count - before[name].count
        assert per_length[name].sum == pytest.approx(after[name].sum - before[name].sum, rel=1e-9)
    # Every transfer the log shows for the length (warm-up included), and the same bytes.
    assert per_length["latency_ms"].count == len(logged) == 11
    assert per_length["total_mb"].sum == pytest.approx(sum(s.transfer_total_MiB for s in logged), rel=1e-9)
    # The log's time is total / speed with the speed printed to 2 digits: within that rounding.
    logged_ms = sum(s.transfer_s for s in logged) * 1000
    assert per_length["latency_ms"].sum == pytest.approx(logged_ms, rel=0.01)


def test_the_summarys_metrics_section_is_as_recorded(fresh):
    assert fresh["metrics"] == _recorded_summary()["metrics"]
