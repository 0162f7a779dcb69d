"""What ran against docker/versions.env (provenance.json -> summary what_ran -> report, check, gates),
on the recorded H200 run: it served release wheels, so under the published pins_match: gate it fails,
under the one-box scenario's warn it warns; an image's build of the pins matches."""

from __future__ import annotations

import json

from recordedrun import RECORDED, copy_run

from pdrepro.analysis.whatran import differences, what_ran
from pdrepro.cli import main
from pdrepro.core.pins import load_pins
from pdrepro.kinds.registry import load_or_analyze
from pdrepro.rundir import RunDir
from pdrepro.scenario.model import load_scenario
from pdrepro.verdicts.gates import evaluate, failed


def _prov() -> dict:
    return json.loads((RECORDED / "provenance.json").read_text())


def test_the_recorded_run_served_release_wheels_not_the_pinned_builds():
    rows = {r["item"]: r for r in what_ran(_prov())}
    assert rows["SGLang (prefill server)"]["ran"] == "0.5.15.post1"  # from the server's own /server_info
    assert rows["SGLang (prefill server)"]["pinned"] == "0.5.15.post1+g" + load_pins()["SGLANG_COMMIT"][:12]
    assert [r["item"] for r in differences(list(rows.values()))] == [
        "SGLang (decode server)", "SGLang (prefill server)", "Mooncake"]
    assert rows["torch"]["match"] is True and rows["CUDA (torch's build)"]["match"] is True
    assert rows["sglang-router"]["match"] is True


def _as_the_image_built_it(prov: dict) -> dict:
    pins = load_pins()
    for info in prov["server_info"].values():
        info["version"] = f"{pins['SGLANG_NEAREST_RELEASE']}+g{pins['SGLANG_COMMIT']}"
    prov["versions"]["image"] = {"pdrepro_image_mooncake_commit": pins["MOONCAKE_COMMIT"],
                                 "pdrepro_image_sglang_commit": pins["SGLANG_COMMIT"]}
    return prov


def test_an_image_build_of_the_pins_matches_them():
    assert differences(what_ran(_as_the_image_built_it(_prov()))) == []


def test_a_wheel_is_named_by_its_distribution_and_never_taken_for_the_pin():
    prov = _prov()
    prov["versions"]["packages"]["mooncake-transfer-engine"] = {
        "found": True, "distribution": "mooncake-transfer-engine-cuda13", "version": "0.3.12.post1"}
    row = next(r for r in what_ran(prov) if r["item"] == "Mooncake")
    assert row["ran"] == "mooncake-transfer-engine-cuda13 0.3.12.post1 (a wheel)" and row["match"] is False


def test_pins_match_gates_the_published_policy_and_warns_under_the_one_box_one(tmp_path, capsys):
    run = copy_run(tmp_path)
    gate = load_scenario(run / "scenario.yaml")
    assert gate.pins_match == "gate" and load_scenario("onebox-qwen25-0.5b").pins_match == "warn"
    pins = next(r for r in evaluate(load_or_analyze(RunDir(run), gate), gate) if r.name == "pins_match")
    assert not pins.passed and "SGLang (prefill server) ran 0.5.15.post1" in pins.detail

    assert main(["check", str(run), "--scenario", "onebox-qwen25-0.5b"]) == 0
    out = capsys.readouterr().out
    assert "WARN " in out and "what ran differs from docker/versions.env" in out and "pins_match: warn" in out

    (run / "provenance.json").write_text(json.dumps(_as_the_image_built_it(_prov())))
    results = evaluate(load_or_analyze(RunDir(run), gate), gate)
    assert "pins_match" not in [r.name for r in failed(results)]


def test_the_reports_provenance_is_a_summary_and_the_records_stay_in_provenance_json(tmp_path):
    run = copy_run(tmp_path)
    assert main(["analyze", str(run), "--scenario", "onebox-qwen25-0.5b"]) == 0
    report = (run / "report.md").read_text()
    section = report[report.index("## Provenance"):report.index("## Units")]
    assert "internal_states" not in report and "speculative_ngram" not in report  # no /server_info dump
    assert "'proven'" not in report and '"proven"' not in report  # the transport is words, not a dict
    assert "transport proof: not run (--no-transport-proof)" in section
    assert "prefill: SGLang 0.5.15.post1; model_path /tmp/pd/model, tp_size 1" in section
    assert "3 of 8 components differ from docker/versions.env" in section
    assert section.count("| SGLang (") == 2 and "are in provenance.json" in section
    assert len(report) < 12_000  # the recorded report was 69 KB
    assert "internal_states" in (run / "provenance.json").read_text()


# Issue 15, 7: provenance that names other commits than the pins is no run of the pinned software.

def test_recorded_pins_of_other_commits_differ():
    prov = _as_the_image_built_it(_prov())
    prov["pins"] = {"sglang_commit": "0123456789abcdef0123456789abcdef01234567",
                    "mooncake_commit": load_pins()["MOONCAKE_COMMIT"]}
    rows = {r["item"]: r for r in what_ran(prov)}
    assert [r["item"] for r in differences(list(rows.values()))] == ["SGLang commit (provenance pins)"]
    assert rows["Mooncake commit (provenance pins)"]["match"] is True


def test_recorded_pins_as_commits_of_twelve_hex_digits_match():
    prov = _as_the_image_built_it(_prov())
    pins = load_pins()
    prov["pins"] = {"sglang_commit": pins["SGLANG_COMMIT"][:12], "mooncake_commit": pins["MOONCAKE_COMMIT"][:12]}
    assert differences(what_ran(prov)) == []


def test_a_commit_shorter_than_twelve_hex_digits_never_matches_a_pin():
    pins = load_pins()
    for short in (8, 11):
        prov = _as_the_image_built_it(_prov())
        prov["pins"] = {"sglang_commit": pins["SGLANG_COMMIT"][:short], "mooncake_commit": pins["MOONCAKE_COMMIT"]}
        for info in prov["server_info"].values():
            info["version"] = f"{pins['SGLANG_NEAREST_RELEASE']}+g{pins['SGLANG_COMMIT'][:short]}"
        bad = {r["item"] for r in differences(what_ran(prov))}
        assert {"SGLang commit (provenance pins)", "SGLang (prefill server)", "SGLang (decode server)"} <= bad, short


def test_a_told_pin_is_not_shown_as_matching_next_to_a_version_that_does_not():
    # The recorded run: the sweep was told the pinned commits, the servers ran release wheels.
    rows = {r["item"]: r for r in what_ran(_prov())}
    assert rows["SGLang (prefill server)"]["match"] is False
    told = rows["SGLang commit (provenance pins)"]
    assert told["match"] is None and "not what ran" not in told["source"] and "what ran differs" in told["source"]


def test_a_published_reproduction_with_other_pinned_commits_fails_the_pins_gate(tmp_path):
    from runbuilder import build_run

    sc = load_scenario("h20-qwen3-235b-1p1d")
    prov = {"pins": {"sglang_commit": "0123456789abcdef0123456789abcdef01234567", "mooncake_commit": "6e3a11b9"},
            "scenario": {"name": sc.name, "fingerprint": sc.fingerprint},
            "host": {"kernel": "6.8"}, "environment": {}, "endpoints": {"router": "http://10.0.0.2:8000"},
            "transport": {"proven": True, "servers": {"prefill": {"summary": "prefill: RDMA on mlx5_0 (GID index 3)"}}}}
    run = build_run(tmp_path / "run", sc, provenance=prov)
    bad = failed(evaluate(load_or_analyze(run, sc), sc))
    assert [r.name for r in bad] == ["pins_match"], bad
    assert "0123456789ab" in bad[0].detail
