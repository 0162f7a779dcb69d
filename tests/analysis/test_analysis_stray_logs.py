"""Server logs that do not belong to the run are not merged into its figures (issue 15, 5),
and a log that holds fewer of a length's requests than the client completed fails the length."""

from __future__ import annotations

import re

from clihelp import assert_one_line_error, pdrepro
from runbuilder import build_run, sweep_provenance

from pdrepro.analysis.summarize import compute_summary
from pdrepro.rundir import RunDir
from pdrepro.scenario.model import load_scenario
from pdrepro.sweep.logsource import DirLogSource
from pdrepro.verdicts.gates import evaluate, failed

SCENARIO = load_scenario("h20-qwen3-235b-1p1d")
TWO = load_scenario("h20-qwen3-235b-2p2d")


def _errors(summary, kind):
    return [i for i in summary["issues"] if i["kind"] == kind and i["severity"] == "error"]


def test_a_log_of_a_server_the_topology_lacks_is_set_aside(tmp_path):
    clean = compute_summary(build_run(tmp_path / "clean", SCENARIO, provenance=sweep_provenance(SCENARIO)), SCENARIO)
    run = build_run(tmp_path / "run", SCENARIO, provenance=sweep_provenance(SCENARIO))
    # An earlier 2P2D run left its second prefill server's log in the shared folder.
    other = build_run(tmp_path / "old", TWO, provenance=sweep_provenance(TWO))
    (run.logs_dir / "prefill-1.log").write_text(other.server_log("prefill", 1).read_text())
    summary = compute_summary(run, SCENARIO)
    (error,) = _errors(summary, "stray_server_log")
    assert "prefill-1.log" in error["message"] and "1P1D" in error["message"]
    assert [r["transfer_ms_median"] for r in summary["rows"]] == [r["transfer_ms_median"] for r in clean["rows"]]
    assert_one_line_error(pdrepro("check", run.root), "check", "prefill-1.log")


def test_the_sweep_does_not_copy_logs_of_servers_the_topology_lacks(tmp_path):
    folder = tmp_path / "shared"
    folder.mkdir()
    for name in ("prefill.log", "decode.log", "prefill-1.log"):
        (folder / name).write_text(f"[2026-07-15 10:00:00] server_args=ServerArgs() {name}\n")
    source = DirLogSource(folder)
    run = RunDir(tmp_path / "run")
    copied = source.copy_to(run, {"prefill": 1, "decode": 1})
    assert sorted(p.name for p in copied) == ["decode.log", "prefill.log"]
    assert not (run.logs_dir / "prefill-1.log").exists()
    assert [p.name for p in source.set_aside] == ["prefill-1.log"]


def _interleave(a: str, b: str) -> str:
    """Two logs' lines in the order of their timestamps, as two servers appending to one file write them."""
    def stamped(text):
        out, last = [], ""
        for line in text.splitlines():
            m = re.match(r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)", line)
            last = m.group(1) if m else last
            out.append((last, line))
        return out
    merged = sorted(stamped(a) + stamped(b), key=lambda item: item[0])
    return "\n".join(line for _, line in merged) + "\n"


def test_two_servers_interleaved_in_one_file_are_detected(tmp_path):
    two = build_run(tmp_path / "two", TWO, provenance=sweep_provenance(TWO))
    run = build_run(tmp_path / "run", SCENARIO, provenance=sweep_provenance(SCENARIO))
    run.prefill_log.write_text(_interleave(two.prefill_log.read_text(), two.server_log("prefill", 1).read_text()))
    summary = compute_summary(run, SCENARIO)
    (error,) = _errors(summary, "interleaved_servers")
    assert "prefill.log" in error["message"] and "two servers" in error["message"]


def test_a_restarted_server_is_not_called_two(tmp_path):
    run = build_run(tmp_path / "run", SCENARIO, provenance=sweep_provenance(SCENARIO))
    text = run.prefill_log.read_text()
    start = next(l for l in text.splitlines() if "server_args=" in l)
    run.prefill_log.write_text(start + "\n" + text)  # a start that died before it was ready, then the real one
    assert not _errors(compute_summary(run, SCENARIO), "interleaved_servers")


def test_a_log_short_of_the_clients_requests_fails_the_length(tmp_path):
    run = build_run(tmp_path / "run", SCENARIO, provenance=sweep_provenance(SCENARIO))
    lines = run.prefill_log.read_text().splitlines()
    ours = [i for i, l in enumerate(lines) if "ReqTimeStats(" in l and "input_len=4096," in l]
    drop = set(ours[-5:])
    run.prefill_log.write_text("\n".join(l for i, l in enumerate(lines) if i not in drop) + "\n")
    summary = compute_summary(run, SCENARIO)
    bad = failed(evaluate(summary, SCENARIO))
    assert [(r.name, r.prompt_len) for r in bad] == [("requests_logged", 4096)], bad
    assert "45" in bad[0].detail and "50" in bad[0].detail
    result = pdrepro("check", run.root)
    assert result.rc == 1
    assert any(l.startswith("FAIL ") and "4096" in l for l in result.out.splitlines())


def test_counters_read_a_day_before_the_requests_leave_the_witness_not_measured(tmp_path):
    run = build_run(tmp_path / "run", SCENARIO, provenance=sweep_provenance(SCENARIO), nic_shift_s={2048: -86400.0})
    summary = compute_summary(run, SCENARIO)
    warned = [i for i in summary["issues"] if i["kind"] == "logs_outside_counter_window"]
    assert [i["prompt_len"] for i in warned] == [2048] and warned[0]["severity"] == "warning"
    row = next(r for r in summary["rows"] if r["prompt_len"] == 2048)
    # The readings' bytes (the KV of some other stretch) stay, but they witness nothing of this length.
    assert row["nic_kv_share_pct"] is None and row["nic_nodes"]["prefill"]["bytes"] > 0
    bad = failed(evaluate(summary, SCENARIO))
    # The witness and each rail: readings of another stretch of time measure neither.
    assert {(r.name, r.prompt_len) for r in bad} == {("nic_witness", 2048), ("rail_share", 2048)}
    assert all("not measured" in r.detail for r in bad)
    assert "outside the window" in next(r.detail for r in bad if r.name == "nic_witness")
    result = pdrepro("check", run.root)
    assert result.rc == 1
    assert any(l.startswith("WARN ") and "2048" in l and "window" in l for l in result.out.splitlines())
    assert any(l.startswith("FAIL length 2048: NIC byte counts not measured") for l in result.out.splitlines())
