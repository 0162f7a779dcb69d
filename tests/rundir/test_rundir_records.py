"""RunDir reads and writes the run's JSON records as their models, in the bytes the producers always wrote."""

from __future__ import annotations

import json

import pytest

from pdrepro.core.errors import UserError
from pdrepro.rundir import BaselineFile, Provenance, RunDir
from pdrepro.rundir.contract import ERROR, issue
from pdrepro.rundir.issuekind import IssueKind
from pdrepro.rundir.summarymodel import Issue
from pdrepro.sweep.state import SweepState


def test_sweep_state_round_trips_and_reads_as_the_sweep_wrote_it(tmp_path):
    run = RunDir(tmp_path)
    state = SweepState(run)
    state.record(128, "done", seconds=1.5)
    state.record(256, "failed", reason="timeout", seconds=9.0)
    state.event("transport", proven=True, servers={"decode": "rdma"})
    text = run.sweep_state_file.read_text()
    data = json.loads(text)
    # The file's shape: as the sweep has always written it (sorted keys, indent 2), no None-valued fields added.
    assert text == json.dumps(data, indent=2, sort_keys=True) + "\n"
    assert set(data["lengths"]["128"]) == {"status", "at", "seconds"}
    assert data["events"][0]["servers"] == {"decode": "rdma"}
    again = run.read_sweep_state()
    assert again.failed() == {256: "timeout"}
    assert again.lengths["128"].seconds == 1.5 and again.events[0].event == "transport"
    run.write_sweep_state(again)
    assert run.sweep_state_file.read_text() == text


@pytest.mark.parametrize("content", ["{cut", '{"lengths": []}', '[1, 2]'])
def test_damaged_sweep_state_reads_as_none_recorded(tmp_path, content):
    run = RunDir(tmp_path)
    run.sweep_state_file.write_text(content)
    assert run.read_sweep_state().failed() == {}


def test_baseline_keeps_the_order_and_the_keys_it_was_given(tmp_path):
    run = RunDir(tmp_path)
    record = BaselineFile(schema_version=1, peer="10.0.0.2", created="2026-01-01T00:00:00+00:00", nics=["mlx5_0"],
                          line_rate_GB_s=50.0)
    record.transfer_engine_bench = {"throughput_GB_s": 40.0}
    record.baseline_GB_s, record.baseline_source = 40.0, "transfer_engine_bench"
    run.write_baseline(record)
    data = json.loads(run.baseline_file.read_text())
    assert list(data) == ["schema_version", "peer", "created", "nics", "line_rate_GB_s", "transfer_engine_bench",
                          "baseline_GB_s", "baseline_source"]  # no ib_write_bw: that tool did not run
    assert run.baseline_ceiling() == 40.0


@pytest.mark.parametrize("value,ceiling", [(None, None), ("fast", None), (True, None), (12, 12.0)])
def test_baseline_without_a_number_has_no_ceiling(tmp_path, value, ceiling):
    run = RunDir(tmp_path)
    run.baseline_file.write_text(json.dumps({"baseline_GB_s": value}))
    assert run.baseline_ceiling() == ceiling


@pytest.mark.parametrize("value", [0, -3, "NaN"])
def test_baseline_with_an_impossible_ceiling_is_one_line(tmp_path, value):
    run = RunDir(tmp_path)
    run.baseline_file.write_text('{"baseline_GB_s": %s}' % (value if value != "NaN" else "NaN"))
    with pytest.raises(UserError, match="not a measured ceiling: re-run `pdrepro baseline"):
        run.baseline_ceiling()


def test_provenance_is_kept_as_written(tmp_path):
    run = RunDir(tmp_path)
    facts = {"pins": {"b": 1, "a": 2}, "transport": {"proven": True}, "host": {}}
    run.write_provenance(Provenance(facts))
    assert run.provenance_file.read_text() == json.dumps(facts, indent=2) + "\n"
    record = run.read_provenance()
    assert record.transport == {"proven": True} and list(record.to_json()) == ["pins", "transport", "host"]
    run.provenance_file.write_text("[1]")
    assert run.read_provenance() is None
    run.provenance_file.write_text("{cut")
    with pytest.raises(json.JSONDecodeError):
        run.read_provenance()


def test_issue_kinds_are_one_enumeration():
    assert issue(ERROR, IssueKind.MISSING_LENGTH, "m")["kind"] == "missing_length"
    # A kind nobody declared is a bug in the code that raised it, caught where it is made.
    with pytest.raises(ValueError):
        issue(ERROR, "bench_note", "m")
    assert Issue(severity="error", kind="stall", message="m").kind is IssueKind.STALL
    assert {"no_reqstats": 1}.get(IssueKind.NO_REQSTATS) == 1


def test_counter_record_is_written_as_the_sweep_always_wrote_it(tmp_path):
    from pdrepro.sweep.counters import record

    run = RunDir(tmp_path)
    ports = {"mlx5_0/1": {"state": "ACTIVE", "rate": "400 Gb/sec (4X NDR)", "port_xmit_data": 10}}
    before = {"decode": {"source": "here", "at": 1.0, "ports": ports, "rdma_devices": ["mlx5_0"]},
              "prefill": {"source": None, "error": "no log source reaches it"}}
    after = {"decode": {"source": "here", "at": 2.0, "ports": ports}, "prefill": {"source": None, "error": "x"}}
    run.write_counters(record(before, after, 4096))
    data = json.loads(run.counters_file(4096).read_text())
    assert run.counters_file(4096).read_text() == json.dumps(data, indent=2, sort_keys=True) + "\n"
    assert data["nodes"]["prefill"] == {"source": None, "error": "no log source reaches it"}
    assert data["nodes"]["decode"] == {"source": "here", "rdma_devices": ["mlx5_0"], "before": {"at": 1.0, "ports": ports},
                                       "after": {"at": 2.0, "ports": ports}}
    assert run.read_counters(4096).prompt_len == 4096 and run.read_counters(128) is None


def test_summary_is_written_strict_and_read_as_the_model(tmp_path):
    run = RunDir(tmp_path / "run")
    summary = {"schema_version": 1, "scenario": {}, "scenario_fingerprint": "f", "source": "smoke", "rows": [],
               "issues": [issue(ERROR, IssueKind.SMOKE_FAILED, "m")]}
    from pdrepro.rundir.contract import SUMMARY_SCHEMA_VERSION
    summary["schema_version"] = SUMMARY_SCHEMA_VERSION
    run.write_summary(summary)
    assert run.summary_file.read_text() == json.dumps(summary, indent=2) + "\n"
    assert run.read_stored_summary() == summary
    assert run.read_summary().issues[0].kind is IssueKind.SMOKE_FAILED
    with pytest.raises(UserError, match="summary.json: not written: rows"):
        run.write_summary({**summary, "rows": [{"prompt_len": 1, "bandwidth_GB_s": float("nan")}]})
    run.summary_file.write_text("{cut")
    assert run.read_stored_summary() is None
