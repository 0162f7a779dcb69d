import os
import re
from pathlib import Path

from runbuilder import build_run

from pdrepro.analysis.summarize import compute_summary
from pdrepro.report.markdown import render_report
from pdrepro.report.plots import render_plots
from pdrepro.scenario.model import load_scenario

SCENARIO = load_scenario("h20-qwen3-235b-1p1d")
GOLDEN = Path(__file__).parent.parent / "golden" / "report-h20-published.md"


def test_report_of_the_published_run_matches_golden(tmp_path):
    """Regenerate with PDREPRO_UPDATE_GOLDEN=1 after an intended change, and review the diff."""
    report = render_report(compute_summary(build_run(tmp_path / "r", SCENARIO, provenance=None), SCENARIO))
    if os.environ.get("PDREPRO_UPDATE_GOLDEN"):
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(report)
    assert report == GOLDEN.read_text()


def test_report_shows_published_columns_reference_and_units(tmp_path):
    report = render_report(compute_summary(build_run(tmp_path / "r", SCENARIO, transfer_factor={32768: 2.0}), SCENARIO))
    for header in ("Prompt Length", "TTFT (ms)", "KV Size", "Transfer Time (ms)", "Bandwidth (GB/s)",
                   "Utilization (%)", "Transfer share of TTFT (%)", "published", "Δ (%)"):
        assert header in report
    assert "| 12.62 GB |" in re.sub(" +", " ", report)
    assert "-50.0" in report      # bandwidth delta of the degraded length
    assert "GiB/s and MiB" in report
    assert "161.15 GB/s** at 16384" in report


def _smoke_summary():
    return {
        "schema_version": 1, "scenario_fingerprint": "0" * 64, "source": "smoke", "transport": "tcp",
        "line_rate_GB_s": 1.25,
        "scenario": {"name": "smoke-tcp", "title": "Smoke"},
        "rows": [{"prompt_len": 128, "requests": 10, "ttft_ms_mean": None, "kv_bytes": 3_670_016,
                  "transfer_ms_median": 2.0, "bandwidth_GB_s": 1.84, "utilization_pct": None,
                  "transfer_share_of_ttft_pct": None},
                 {"prompt_len": 1024, "requests": 10, "ttft_ms_mean": None, "kv_bytes": 29_360_128,
                  "transfer_ms_median": 12.0, "bandwidth_GB_s": 2.45, "utilization_pct": None,
                  "transfer_share_of_ttft_pct": None}],
        "headline": {"peak_bandwidth_GB_s": 2.45, "peak_bandwidth_prompt_len": 1024},
        "issues": [], "provenance": {"image": "pdrepro-smoke@sha256:abc"}, "baseline_GB_s": 2.3,
    }


def test_smoke_summary_renders_missing_ttft_as_dash(tmp_path):
    report = render_report(_smoke_summary())
    assert "source: smoke" in report and "transport: tcp" in report
    line = next(l for l in report.splitlines() if l.strip().startswith("|") and "| 1024 |" in re.sub(" +", " ", l))
    assert "29.36 MB" in line
    # No row has a TTFT, a utilisation or a transfer share: those columns are left out, not filled with dashes.
    header = next(l for l in report.splitlines() if l.startswith("|") and "Prompt Length" in l)
    for gone in ("TTFT", "Utilization", "Transfer share"):
        assert gone not in header
    assert "Transfer Time (ms)" in header and "Bandwidth (GB/s)" in header
    assert "image: pdrepro-smoke@sha256:abc" in report
    assert "Against the published run" not in report
    # The SGLang method note (bench client, prefill log) does not describe a smoke run.
    assert "prefill server's log" not in report and "median of the timed transfers" in report
    plots = render_plots(_smoke_summary(), tmp_path / "plots")
    assert [p.name for p in plots] == ["bandwidth.png", "transfer-vs-size.png"]


def test_report_without_any_measurement_says_so():
    report = render_report({"schema_version": 1, "scenario": {"name": "x"}, "scenario_fingerprint": "0" * 64,
                            "source": "sglang", "rows": [],
                            "issues": [{"severity": "error", "kind": "no_reqstats", "prompt_len": None,
                                        "message": "logs/prefill.log: no ReqTimeStats line"}]})
    assert "No prompt length has a measured KV transfer" in report
    assert "**error**: logs/prefill.log: no ReqTimeStats line" in report
