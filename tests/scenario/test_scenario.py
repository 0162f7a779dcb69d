"""The scenario loader refuses bad files with one line naming the file, the key and the fix."""

from importlib import resources

import pytest
import yaml

from pdrepro.core.errors import UserError
from pdrepro.scenario.model import load_scenario, resolve_scenario, shipped_names


def _shipped() -> dict:
    return yaml.safe_load((resources.files("pdrepro") / "scenarios" / "h20-qwen3-235b-1p1d.yaml").read_text())


def _write(tmp_path, data) -> str:
    path = tmp_path / "s.yaml"
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data))
    return str(path)


def _error(tmp_path, data) -> str:
    path = _write(tmp_path, data)
    with pytest.raises(UserError) as info:
        load_scenario(path)
    message = str(info.value)
    assert path in message and "\n" not in message
    return message


@pytest.mark.parametrize("name", shipped_names())
def test_every_shipped_scenario_loads_and_round_trips(tmp_path, name):
    s = load_scenario(name)
    again = load_scenario(_write(tmp_path, s.to_yaml()))
    assert again.fingerprint == s.fingerprint


def test_unknown_key_is_named(tmp_path):
    data = _shipped()
    data["sweep"]["num_promts"] = 5
    assert "unknown key sweep.num_promts" in _error(tmp_path, data)


def test_wrong_type(tmp_path):
    data = _shipped()
    data["parallel"]["prefill_tp"] = "eight"
    assert "parallel.prefill_tp: expected an integer" in _error(tmp_path, data)


def test_out_of_range(tmp_path):
    data = _shipped()
    data["sweep"]["random_range_ratio"] = 1.5
    assert "above the maximum 1" in _error(tmp_path, data)


def test_missing_key(tmp_path):
    data = _shipped()
    del data["sweep"]["seed"]
    assert "missing key sweep.seed" in _error(tmp_path, data)


def test_bad_yaml_and_empty_file(tmp_path):
    assert "not valid YAML at line" in _error(tmp_path, "name: [unclosed\nkind: x\n")
    assert "empty" in _error(tmp_path, "")
    # A control character is refused by YAML's reader before any parse: one line naming it, no traceback.
    assert "character U+001F at offset 7, which YAML does not allow" in _error(tmp_path, "name: x\x1f\n")


def test_threshold_for_a_length_outside_the_sweep(tmp_path):
    data = _shipped()
    data["thresholds"]["min_bandwidth_GB_s"][999] = 1.0
    assert "prompt length 999" in _error(tmp_path, data)


def test_unknown_name_and_missing_path(tmp_path):
    with pytest.raises(UserError, match="unknown scenario 'h100'"):
        load_scenario("h100")
    with pytest.raises(UserError, match="no such scenario file"):
        load_scenario(str(tmp_path / "gone.yaml"))


def test_thresholds_override_and_bad_threshold_file(tmp_path):
    good = tmp_path / "t.yaml"
    good.write_text("max_transfer_share_pct: 3.0\n")
    s = resolve_scenario("h20-qwen3-235b-1p1d", None, str(good))
    published = load_scenario("h20-qwen3-235b-1p1d").thresholds
    # Only what the file names changes: the per-length gates stay.
    assert s.thresholds.max_transfer_share_pct == 3.0
    assert s.thresholds.min_bandwidth_GB_s == published.min_bandwidth_GB_s
    per_length = tmp_path / "bw.yaml"
    per_length.write_text("thresholds:\n  min_bandwidth_GB_s: {32768: 150.0}\n")
    s = resolve_scenario("h20-qwen3-235b-1p1d", None, str(per_length))
    assert s.thresholds.min_bandwidth_GB_s == {**published.min_bandwidth_GB_s, 32768: 150.0}
    assert s.thresholds.max_ttft_ms == published.max_ttft_ms
    outside = tmp_path / "outside.yaml"
    outside.write_text("min_bandwidth_GB_s: {65536: 1.0}\n")
    with pytest.raises(UserError, match="65536"):
        resolve_scenario("h20-qwen3-235b-1p1d", None, str(outside))
    bad = tmp_path / "bad.yaml"
    bad.write_text("max_transfer_share_pct: 300\n")
    with pytest.raises(UserError, match="above the maximum 100"):
        resolve_scenario("h20-qwen3-235b-1p1d", None, str(bad))


def test_missing_run_directory_is_named_before_the_scenario(tmp_path):
    with pytest.raises(UserError, match="no such run directory"):
        resolve_scenario(None, tmp_path / "absent")


@pytest.mark.parametrize("change, needle", [
    ({"num_key_value_heads": 0}, "num_key_value_heads"),
    ({"num_key_value_heads": -4}, "num_key_value_heads"),
    ({"head_dim": 0}, "head_dim"),
    ({"num_attention_heads": 48, "num_key_value_heads": 3}, "TP 8"),   # 3 KV heads over 8 ranks: no even split
    ({"num_attention_heads": 64, "num_key_value_heads": 5}, "num_attention_heads"),   # 64 query heads, 5 KV groups
])
def test_geometry_that_cannot_be_a_model_is_refused_at_load(tmp_path, change, needle):
    data = _shipped()
    data["model"]["geometry"].update(change)
    assert needle in _error(tmp_path, data)


def test_nan_ratio_and_nan_rate_are_refused(tmp_path):
    data = _shipped()
    data["sweep"]["random_range_ratio"] = float("nan")
    assert "sweep.random_range_ratio" in _error(tmp_path, data)
    data = _shipped()
    data["link"]["nic_rate_Gb_s"] = float("nan")
    assert "link.nic_rate_Gb_s" in _error(tmp_path, data)


def test_infinity_only_where_it_means_unbounded(tmp_path):
    data = _shipped()
    data["link"]["nic_rate_Gb_s"] = "inf"
    assert "link.nic_rate_Gb_s" in _error(tmp_path, data)


def test_prompt_length_beyond_any_model_is_refused(tmp_path):
    data = _shipped()
    data["sweep"]["prompt_lens"] = [128, 50_000_000]
    assert "sweep.prompt_lens" in _error(tmp_path, data)


def test_non_utf8_scenario_file_is_one_line(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_bytes(yaml.safe_dump(_shipped()).encode() + b"# caf\xe9 latin-1\n")
    with pytest.raises(UserError, match="UTF-8") as info:
        load_scenario(path)
    assert str(path) in str(info.value)


def test_negative_timeouts_in_the_launch_environment_are_refused(tmp_path):
    data = _shipped()
    data["launch"]["env"]["SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT"] = "-30"
    assert "SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT" in _error(tmp_path, data)


@pytest.mark.parametrize("name", shipped_names())
def test_every_shipped_rule_gives_its_threshold(name):
    from pdrepro.scenario.derivation import problems

    s = load_scenario(name)
    assert problems(s.thresholds, s.reference) == []


def test_the_published_scenarios_state_the_rule_of_their_main_bounds():
    for name in ("h20-qwen3-235b-1p1d", "h20-qwen3-235b-2p2d"):
        rules = load_scenario(name).thresholds.derivation
        assert {(k, r.factor) for k, r in rules.items() if r.factor is not None} == {
            ("min_bandwidth_GB_s", 0.8), ("max_ttft_ms", 1.25), ("min_peak_bandwidth_GB_s", 0.9),
            ("min_peak_utilization_pct", 0.9)}


def test_a_rule_that_names_no_threshold_or_half_a_factor_is_refused(tmp_path):
    data = _shipped()
    data["thresholds"]["derivation"]["min_bandwidht_GB_s"] = {"rule": "typo"}
    assert "min_bandwidht_GB_s names no threshold" in _error(tmp_path, data)
    data = _shipped()
    data["thresholds"]["derivation"]["max_ttft_ms"] = {"rule": "half", "factor": 1.25}
    assert "factor and of together" in _error(tmp_path, data)


def test_a_thresholds_file_drops_the_rule_of_each_bound_it_sets(tmp_path):
    from pdrepro.scenario.model import merge_thresholds

    base = load_scenario("h20-qwen3-235b-1p1d").thresholds
    overlay = tmp_path / "t.yaml"
    overlay.write_text("min_peak_bandwidth_GB_s: 100.0\n")
    merged = merge_thresholds(base, overlay)
    assert "min_peak_bandwidth_GB_s" not in merged.derivation and "max_ttft_ms" in merged.derivation
