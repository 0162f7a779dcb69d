"""engine-ceiling.json (the Mooncake engine alone on the run's box) read and set against the rows:
the recorded H200 run's file gives the ratios its README states, a damaged file is bad input."""

from __future__ import annotations

import json
from dataclasses import asdict

import pytest
from recordedrun import RECORDED, copy_run

from pdrepro.analysis.summarize import compute_summary
from pdrepro.cli import main
from pdrepro.gpucheck.run import Row
from pdrepro.rundir import RunDir
from pdrepro.rundir.engineceiling import CeilingError, load_ceiling
from pdrepro.scenario.model import load_scenario


def test_the_recorded_ceiling_sets_sglangs_requests_at_about_two_thirds_of_the_engine():
    summary = compute_summary(RunDir(RECORDED), load_scenario(RECORDED / "scenario.yaml"))
    ratios = {L: round(c["ratio"], 2) for L, c in summary["engine_ceiling"].items()}
    assert ratios == {"128": 0.16, "1024": 0.57, "4096": 0.67, "16384": 0.65}
    c = summary["engine_ceiling"]["4096"]
    assert c["engine_shape"] == "layers" and c["engine_GB_s"] == pytest.approx(2.138, abs=1e-3)


def test_check_prints_the_ratio_and_the_report_explains_the_gap(tmp_path, capsys):
    run = copy_run(tmp_path)
    assert main(["check", str(run), "--scenario", "onebox-qwen25-0.5b"]) == 0
    out = capsys.readouterr().out
    assert "engine ceiling: length 4096: 1.43 GB/s per request, the engine alone 2.14 GB/s (layers): ratio 0.67" in out
    main(["analyze", str(run), "--scenario", "onebox-qwen25-0.5b"])  # the report is analyze's (check writes nothing)
    report = (run / "report.md").read_text()
    assert "## Against the engine alone on the same box" in report and "polling" in report


@pytest.mark.parametrize("content, words", [
    ("{not json", "not readable JSON"),
    ('{"4096": {"bytes": 1}}', "is not '<tokens>/<shape>'"),
    ('{"4096/one": {"bytes": 1, "median_ms": 1}}', "entry '4096/one': min_ms"),
])
def test_a_damaged_ceiling_is_bad_input_naming_the_file(tmp_path, capsys, content, words):
    (tmp_path / "engine-ceiling.json").write_text(content)
    with pytest.raises(CeilingError, match=words):
        load_ceiling(tmp_path)
    run = copy_run(tmp_path)
    (run / "engine-ceiling.json").write_text(content)
    assert main(["check", str(run), "--scenario", "onebox-qwen25-0.5b"]) == 2
    assert words in capsys.readouterr().err


def test_a_ceiling_of_other_sizes_is_not_compared(tmp_path):
    run = copy_run(tmp_path)
    data = json.loads((run / "engine-ceiling.json").read_text())
    data["4096/one"]["bytes"] = data["4096/layers"]["bytes"] = 1
    (run / "engine-ceiling.json").write_text(json.dumps(data))
    summary = compute_summary(RunDir(run), load_scenario("onebox-qwen25-0.5b"))
    assert "4096" not in summary["engine_ceiling"] and "16384" in summary["engine_ceiling"]


def _gpu_check_result(run, transport="tcp", failures=()):
    """RUN/engine-ceiling/result.json as `pdrepro gpu-check --out RUN/engine-ceiling` writes it: rows of its
    own Row records (one-box sizes: 12288 bytes per token), 5 timed writes each."""
    rows = []
    for L, seconds in ((4096, 0.0200), (16384, 0.0800)):
        row = Row(L, L * 12288, [seconds] * 5, 5, list(failures) if L == 4096 else [])
        rows.append({**asdict(row), "median_GB_s": row.median_GB_s})
    folder = run / "engine-ceiling"
    folder.mkdir()
    (folder / "result.json").write_text(json.dumps({
        "memory": "gpu", "direction": "write", "gpus": {"prefill": 0, "decode": 0}, "transport_requested": transport,
        "transport": transport, "block_bytes": 64 * 2**20, "repeats": 5, "rows": rows, "ok": not failures,
        "transport_problem": None}))


def test_gpu_checks_own_result_is_the_ceiling_where_the_run_holds_it(tmp_path):
    run = copy_run(tmp_path)
    _gpu_check_result(run)
    summary = compute_summary(RunDir(run), load_scenario("onebox-qwen25-0.5b"))
    assert summary["engine_ceiling_source"] == {"file": "engine-ceiling/result.json", "transport": "tcp"}
    c = summary["engine_ceiling"]["4096"]
    assert c["engine_shape"] == "blocks of 64 MiB" and c["engine_GB_s"] == pytest.approx(50331648 / 0.02 / 1e9)
    assert c["ratio"] == pytest.approx(c["bandwidth_GB_s"] / c["engine_GB_s"])
    assert set(summary["engine_ceiling"]) == {"4096", "16384"}  # the lengths gpu-check measured
    assert not any(i["kind"] == "engine_ceiling_transport" for i in summary["issues"])


def test_unverified_writes_are_no_ceiling_and_another_transport_is_flagged(tmp_path):
    run = copy_run(tmp_path)
    _gpu_check_result(run, transport="rdma", failures=["transfer 2: received bytes differ from the sent pattern"])
    summary = compute_summary(RunDir(run), load_scenario("onebox-qwen25-0.5b"))
    assert set(summary["engine_ceiling"]) == {"16384"}
    flagged = [i["message"] for i in summary["issues"] if i["kind"] == "engine_ceiling_transport"]
    assert flagged and "the engine alone used rdma, the servers' engines tcp" in flagged[0]
