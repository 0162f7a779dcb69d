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
from pdrepro.rundir.engineceiling import CeilingError, check_against_run, load_ceiling
from pdrepro.scenario.model import load_scenario
from pdrepro.verdicts.gates import evaluate, failed


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


def _tamper(run, edit) -> None:
    data = json.loads((run / "engine-ceiling.json").read_text())
    edit(data)
    (run / "engine-ceiling.json").write_text(json.dumps(data))


def _scale_bytes(data):
    # Another model's ceiling, self-consistent (its rate follows its bytes): only the run's KV sizes tell.
    for key in ("4096/one", "4096/layers"):
        data[key]["bytes"] *= 2
        data[key]["GB_s"] *= 2


@pytest.mark.parametrize("edit, words", [
    (_scale_bytes, "is not this run's ceiling"),
    (lambda d: d["4096/one"].update(GB_s=d["4096/one"]["GB_s"] * 1.5), "the file was edited"),
    (lambda d: d["4096/one"].update(GB_s=0), "is no measurement"),
    (lambda d: d["4096/one"].update(median_ms=d["4096/one"]["max_ms"] * 2), "is not between its fastest"),
    (lambda d: d["4096/one"].update(median_ms=-1.0), "median_ms"),
])
def test_a_ceiling_that_is_no_measurement_of_this_run_is_refused_on_one_line(tmp_path, capsys, edit, words):
    run = copy_run(tmp_path)
    _tamper(run, edit)
    assert main(["check", str(run), "--scenario", "onebox-qwen25-0.5b"]) == 2
    err = capsys.readouterr().err
    assert words in err and "engine-ceiling.json" in err and len(err.strip().splitlines()) == 1, err


def test_gpu_checks_rate_is_recomputed_from_its_own_seconds(tmp_path):
    run = copy_run(tmp_path)
    _gpu_check_result(run)
    path = run / "engine-ceiling" / "result.json"
    data = json.loads(path.read_text())
    data["rows"][0]["median_GB_s"] *= 3  # a faster engine than its own timings show
    path.write_text(json.dumps(data))
    with pytest.raises(CeilingError, match=r"rows\[0\] \(length 4096, blocks\).*are .* GB/s; the file was edited"):
        compute_summary(RunDir(run), load_scenario("onebox-qwen25-0.5b"))


def test_a_ceiling_faster_than_the_runs_line_rate_is_refused(tmp_path):
    run = copy_run(tmp_path)
    scenario = load_scenario("onebox-qwen25-0.5b")
    found = load_ceiling(run)
    assert found is not None
    best = max(c.GB_s for shapes in found[0].values() for c in shapes.values())
    with pytest.raises(CeilingError, match="above the run's line rate"):
        check_against_run(found[0], scenario.kv_bytes, best / 2)
    check_against_run(found[0], scenario.kv_bytes, best * 2)  # under the line: taken


def test_a_request_well_above_the_engine_alone_is_a_contradiction_that_fails(tmp_path, capsys):
    run = copy_run(tmp_path)
    # The engine alone at a third of what it measured (its bytes and times kept consistent): the requests at
    # 4096 tokens then moved their KV about twice as fast as the engine can on this box.
    _tamper(run, lambda d: [d[k].update(GB_s=d[k]["GB_s"] / 3, median_ms=d[k]["median_ms"] * 3,
                                        min_ms=d[k]["min_ms"] * 3, max_ms=d[k]["max_ms"] * 3)
                            for k in ("4096/one", "4096/layers")])
    scenario = load_scenario("onebox-qwen25-0.5b")
    summary = compute_summary(RunDir(run), scenario)
    assert summary["engine_ceiling"]["4096"]["contradiction"] is True
    assert summary["engine_ceiling"]["1024"]["contradiction"] is False
    bad = [r for r in failed(evaluate(summary, scenario)) if r.name == "engine_ceiling"]
    assert [r.prompt_len for r in bad] == [4096] and "contradicts the engine alone" in bad[0].detail
    assert main(["check", str(run), "--scenario", "onebox-qwen25-0.5b"]) == 1
    out = capsys.readouterr().out
    assert "FAIL length 4096: " in out and "(layers): a contradiction, ratio" in out


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


def test_the_gates_refuse_a_tampered_ceiling_as_check_does(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    run = copy_run(tmp_path)
    _tamper(run, lambda d: d["4096/one"].update(GB_s=d["4096/one"]["GB_s"] * 1.5))
    proc = subprocess.run([sys.executable, "-m", "pytest", "repro/", "--run-dir", str(run), "--scenario",
                           "onebox-qwen25-0.5b", "-p", "no:cacheprovider", "-q", "--no-cov", "-p", "no:xdist"],
                          cwd=Path(__file__).resolve().parents[2], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "the file was edited" in proc.stdout + proc.stderr
