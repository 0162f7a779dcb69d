"""The scenario loader refuses bad files with one line naming the file, the key and the fix."""

from importlib import resources

import pytest
import yaml

from pdrepro.errors import UserError
from pdrepro.scenario import load_scenario, load_thresholds, resolve_scenario, shipped_names


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


def test_every_shipped_scenario_loads_and_round_trips(tmp_path):
    for name in shipped_names():
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
    assert load_thresholds(good).max_transfer_share_pct == 3.0
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
        load_thresholds(bad)


def test_missing_run_directory_is_named_before_the_scenario(tmp_path):
    with pytest.raises(UserError, match="no such run directory"):
        resolve_scenario(None, tmp_path / "absent")
