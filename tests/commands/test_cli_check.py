import json

import pytest
from clihelp import assert_one_line_error, pdrepro, pdrepro_process
from runbuilder import build_run, sweep_provenance

from pdrepro.scenario.model import load_scenario

SCENARIO = load_scenario("h20-qwen3-235b-1p1d")


def test_published_run_passes(tmp_path):
    run = build_run(tmp_path / "run", SCENARIO, provenance=sweep_provenance(SCENARIO))
    result = pdrepro("check", run.root)
    assert result.rc == 0, result.out + result.err
    assert "FAIL" not in result.out
    assert result.out.count("PASS") > 60
    assert "0 failed" in result.out
    assert not run.summary_file.exists()   # judged in memory: check writes nothing into the run
    assert "NOTE " in result.out and "pdrepro analyze" in result.out


def test_doubled_transfer_time_fails_naming_the_length(tmp_path):
    run = build_run(tmp_path / "run", SCENARIO, provenance=sweep_provenance(SCENARIO), transfer_factor={32768: 2.0})
    result = pdrepro_process("check", run.root, "--scenario", SCENARIO.name)
    assert result.rc == 1, result.out + result.err
    fails = [l for l in result.out.splitlines() if l.startswith("FAIL ")]
    assert fails and all("32768" in l for l in fails)
    row = next(l for l in result.out.splitlines() if l.startswith("min_bandwidth") and "32768" in l)
    assert row.split()[-1] == "FAIL" and "GB/s" in row and ">= 131.5 GB/s" in row


def test_stale_summary_is_recomputed(tmp_path):
    run = build_run(tmp_path / "run", SCENARIO, provenance=sweep_provenance(SCENARIO))
    assert pdrepro("analyze", run.root).rc == 0
    written = run.summary_file.read_bytes()
    # Same run, now with the 32K length degraded: check must not trust the old summary, nor rewrite it.
    build_run(tmp_path / "run", SCENARIO, provenance=sweep_provenance(SCENARIO), transfer_factor={32768: 2.0})
    result = pdrepro("check", run.root)
    assert result.rc == 1
    assert any(l.startswith("NOTE ") and "stale" in l for l in result.out.splitlines())
    assert run.summary_file.read_bytes() == written


def test_thresholds_file_replaces_the_scenarios(tmp_path):
    run = build_run(tmp_path / "run", SCENARIO, provenance=sweep_provenance(SCENARIO))
    strict = tmp_path / "strict.yaml"
    strict.write_text("thresholds:\n  min_peak_bandwidth_GB_s: 190\n")
    result = pdrepro("check", run.root, "--thresholds", strict)
    assert result.rc == 1
    assert any(l.startswith("peak_bandwidth") and l.endswith("FAIL") for l in result.out.splitlines())
    bad = tmp_path / "bad.yaml"
    bad.write_text("thresholds:\n  min_peak_bandwidth: 190\n")
    assert_one_line_error(pdrepro("check", run.root, "--thresholds", bad), "check", str(bad), "min_peak_bandwidth")


def test_bad_input_exits_2_after_printing_the_checks(tmp_path):
    run = build_run(tmp_path / "run", SCENARIO, provenance=sweep_provenance(SCENARIO), drop_lengths={16384})
    result = pdrepro("check", run.root)
    assert_one_line_error(result, "check", "result-16384.jsonl")
    assert any(l.startswith("length_present") and "16384" in l and l.endswith("FAIL") for l in result.out.splitlines())
    assert not run.summary_file.exists()


def _edited_to_pass(tmp_path, keep_signature=True):
    """A failing run whose summary.json got a passing run's rows and headline pasted in."""
    good = build_run(tmp_path / "good", SCENARIO, provenance=sweep_provenance(SCENARIO))
    assert pdrepro("analyze", good.root).rc == 0
    run = build_run(tmp_path / "run", SCENARIO, provenance=sweep_provenance(SCENARIO), transfer_factor={32768: 2.0})
    assert pdrepro("analyze", run.root).rc == 0
    passing = json.loads(good.summary_file.read_text())
    edited = json.loads(run.summary_file.read_text())
    edited.update(rows=passing["rows"], headline=passing["headline"])
    if not keep_signature:
        edited.pop("inputs_signature")
    run.summary_file.write_text(json.dumps(edited, indent=2))
    return run


def test_hand_edited_summary_is_an_error_naming_it(tmp_path):
    run = _edited_to_pass(tmp_path)
    result = pdrepro("check", run.root)
    assert_one_line_error(result, "check", "summary.json", "pdrepro analyze")
    assert "PASS" not in result.out  # no verdict printed from an edited summary


def test_summary_without_a_stamp_is_judged_from_the_inputs(tmp_path):
    run = _edited_to_pass(tmp_path, keep_signature=False)
    result = pdrepro("check", run.root)
    assert result.rc == 1, result.out + result.err
    assert any(l.startswith("FAIL ") and "32768" in l for l in result.out.splitlines())


def test_summary_written_by_other_code_is_named_stale_not_called_edited(tmp_path):
    """A run analysed by an older pdrepro: its summary differs from today's analysis, legitimately; check says
    so and judges the inputs, and only `pdrepro analyze` rewrites it."""
    run = build_run(tmp_path / "run", SCENARIO, provenance=sweep_provenance(SCENARIO))
    assert pdrepro("analyze", run.root).rc == 0
    old = json.loads(run.summary_file.read_text())
    old["analysis_code"] = "pdrepro 0.0.1, summary schema 1"
    for row in old["rows"]:
        row.pop("nic_kv_share_pct")
    run.summary_file.write_text(json.dumps(old))
    result = pdrepro("check", run.root)
    assert result.rc == 0, result.out + result.err
    assert any(l.startswith("NOTE ") and "stale" in l for l in result.out.splitlines())
    assert json.loads(run.summary_file.read_text())["analysis_code"] == "pdrepro 0.0.1, summary schema 1"
    assert pdrepro("analyze", run.root).rc == 0
    assert json.loads(run.summary_file.read_text())["analysis_code"] != "pdrepro 0.0.1, summary schema 1"


def test_summary_mangled_in_shape_is_named_and_the_inputs_judged(tmp_path):
    run = build_run(tmp_path / "run", SCENARIO, provenance=sweep_provenance(SCENARIO))
    assert pdrepro("analyze", run.root).rc == 0
    mangled = json.loads(run.summary_file.read_text())
    mangled.update(rows=7, issues=[{"severity": None, "kind": 3}, "x", {"severity": "error"}])
    run.summary_file.write_text(json.dumps(mangled))
    result = pdrepro("check", run.root)
    assert result.rc == 0 and "Traceback" not in result.err
    notes = [l for l in result.out.splitlines() if l.startswith("NOTE ")]
    assert len(notes) == 1 and "summary.json: not a summary this release reads" in notes[0]


def test_check_names_what_it_judges_counts_on_stdout_and_json_is_one_schema_with_the_judges(tmp_path):
    # The recorded A/B's NIXL arm: check names the kind, the scenario and the backend its stack record says
    # (nixl), ends its text with the count on standard output, and --json prints only the JSON.
    from pathlib import Path

    from runkinds import copy_recorded

    from pdrepro.verdicts.outcome import VerdictRecord

    recorded = Path(__file__).resolve().parents[1] / "recorded" / "h200-ab-mooncake-tcp-vs-nixl-sglang-0.5.15.post1"
    ab = copy_recorded(recorded / "ab", tmp_path / "ab").root
    text = pdrepro("check", ab / "nixl")
    assert text.rc == 0, text.err[-2000:]
    first, last = text.out.splitlines()[0], text.out.splitlines()[-1]
    assert first == f"judging {ab / 'nixl'}: a sweep run, scenario onebox-qwen25-0.5b, transfer backend nixl"
    assert last == "38 passed, 0 failed, 5 not applicable" and "passed" not in text.err
    scripted = pdrepro("check", ab / "nixl", "--json")
    record = VerdictRecord.model_validate(json.loads(scripted.out))  # nothing but the JSON on standard output
    assert (scripted.rc, record.kind, record.transfer_backend, record.count) == (0, "sweep", "nixl", last)
    assert (record.passed, record.exit_status) == (True, 0) and len(record.checks) == 43
    # The A/B's own judge and check on its folder: one schema, the same verdict and status.
    judged, checked = pdrepro("ab", "--judge", ab, "--json"), pdrepro("check", ab, "--json")
    a, b = (VerdictRecord.model_validate(json.loads(r.out)) for r in (judged, checked))
    # The shipped schema (`pdrepro schema verdict`) is the one a script validates all three against.
    import jsonschema

    schema = json.loads(pdrepro("schema", "verdict").out)
    for output in (scripted, judged, checked):
        jsonschema.validate(json.loads(output.out), schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**json.loads(checked.out), "verdict": "PASS"}, schema)  # no key it does not declare
    assert judged.rc == checked.rc == a.exit_status == b.exit_status
    assert (a.kind, a.passed, a.summary, a.transfer_backend) == (b.kind, b.passed, b.summary, "mooncake_tcp, nixl")


def test_node_records_written_after_the_analysis_change_no_verdict(tmp_path):
    """A one-box `stack up` into an analysed folder writes RUN/nodes again: the analysis reads no node record, so
    the stored summary stays current (still held to the inputs: an edit is still called one) and check's lines
    are the same."""
    from diagnosisbuild import node_records

    run = build_run(tmp_path / "run", SCENARIO, provenance=sweep_provenance(SCENARIO))
    assert pdrepro("analyze", run.root).rc == 0
    before = pdrepro("check", run.root)
    node_records(run, tmp_path, prefill={"mtu": 1500}, decode={})
    after = pdrepro("check", run.root)
    assert (after.rc, after.out) == (before.rc, before.out) and before.rc == 0
    edited = json.loads(run.summary_file.read_text())
    edited["rows"][0]["requests"] += 1
    run.summary_file.write_text(json.dumps(edited))
    result = pdrepro("check", run.root)
    assert result.rc == 2 and "was changed after the analysis" in result.err
