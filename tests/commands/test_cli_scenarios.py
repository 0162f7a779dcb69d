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
