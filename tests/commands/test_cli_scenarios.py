import yaml
from clihelp import assert_one_line_error, pdrepro

from pdrepro.scenario.model import shipped_names


def test_lists_shipped_scenarios():
    result = pdrepro("scenarios")
    assert result.rc == 0
    names = shipped_names()
    assert names, "no shipped scenarios found"
    for name in names:
        assert name in result.out
    assert "128..32768 (9)" in result.out


def test_show_prints_the_resolved_scenario():
    result = pdrepro("scenarios", "show", "h20-qwen3-235b-1p1d")
    assert result.rc == 0
    data = yaml.safe_load(result.out)
    assert data["name"] == "h20-qwen3-235b-1p1d"
    assert data["parallel"]["prefill_tp"] == 8
    assert data["thresholds"]["max_kv_size_mismatch_pct"] == 5.0


def test_show_unknown_name():
    assert_one_line_error(pdrepro("scenarios", "show", "h100-nope"), "scenarios", "h100-nope", "h20-qwen3-235b-1p1d")
    assert_one_line_error(pdrepro("scenarios", "show"), "scenarios", "needs a scenario name")


def test_show_prints_the_rule_behind_each_threshold():
    # The pass mark's rule is scenario data, not a YAML comment show would strip.
    data = yaml.safe_load(pdrepro("scenarios", "show", "h20-qwen3-235b-1p1d").out)
    rules = data["thresholds"]["derivation"]
    assert rules["min_bandwidth_GB_s"]["factor"] == 0.8 and "80 %" in rules["min_bandwidth_GB_s"]["rule"]
    assert rules["max_ttft_ms"]["factor"] == 1.25 and rules["min_peak_bandwidth_GB_s"]["factor"] == 0.9
    assert set(rules) <= set(data["thresholds"]) - {"derivation"}


def test_show_names_a_rule_an_edited_copy_no_longer_meets(tmp_path):
    data = yaml.safe_load(pdrepro("scenarios", "show", "h20-qwen3-235b-1p1d").out)
    data["thresholds"]["min_bandwidth_GB_s"][32768] = 10.0
    copy = tmp_path / "mine.yaml"
    copy.write_text(yaml.safe_dump(data, sort_keys=False))
    result = pdrepro("scenarios", "show", copy)
    assert result.rc == 0  # a copy with its own bounds loads: judging by it stays possible
    notes = [l for l in result.out.splitlines() if l.startswith("# thresholds.derivation no longer holds")]
    assert len(notes) == 1 and "min_bandwidth_GB_s[32768] is 10" in notes[0], notes
    assert yaml.safe_load(result.out)["thresholds"]["min_bandwidth_GB_s"][32768] == 10.0
