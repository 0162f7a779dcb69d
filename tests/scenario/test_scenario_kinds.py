"""A scenario file loads as the model of its kind, and each kind keeps the rules that differ;
a bad or missing kind reads as the one-line error any other key gets."""

from importlib import resources

import pytest
import yaml

from pdrepro.core.errors import UserError
from pdrepro.rundir import RunDir
from pdrepro.scenario.model import ComparisonScenario, KvSweepScenario, load_scenario, scenario_from_dict, shipped_names


def _shipped(name: str = "h20-qwen3-235b-1p1d") -> dict:
    return yaml.safe_load((resources.files("pdrepro") / "scenarios" / f"{name}.yaml").read_text())


def _error(data: object) -> str:
    with pytest.raises(UserError) as info:
        scenario_from_dict(data, "s.yaml")
    return str(info.value)


@pytest.mark.parametrize("name", shipped_names())
def test_each_shipped_scenario_loads_as_its_kinds_model(name):
    scenario = load_scenario(name)
    expected = {"kv-sweep": KvSweepScenario, "comparison": ComparisonScenario}[_shipped(name)["kind"]]
    assert type(scenario) is expected
    # The kind stays the file's fourth key, so scenario.yaml as a run records it reads as before.
    assert list(scenario.to_dict())[:4] == ["schema_version", "name", "title", "kind"]


@pytest.mark.parametrize("kind", ["sweep", None, 5, ["kv-sweep"]])
def test_a_bad_kind_names_the_key_and_the_kinds(kind):
    assert _error({**_shipped(), "kind": kind}) == f"s.yaml: kind: {kind!r} is not one of kv-sweep, comparison"


def test_a_missing_kind_is_a_missing_key():
    data = _shipped()
    del data["kind"]
    assert _error(data) == "s.yaml: missing key kind; add it (see the shipped scenarios for an example)"


def test_errors_inside_a_kind_name_the_keys_as_written():
    # pydantic puts the chosen kind's tag in the error location; the file has no such key.
    data = _shipped()
    data["sweep"]["num_prompts"] = "many"
    assert _error(data) == "s.yaml: sweep.num_prompts: expected an integer, got 'many'"
    data = _shipped()
    data["bogus"] = 1
    assert _error(data).startswith("s.yaml: unknown key bogus; allowed here: ab, kind, launch, link,")
    comparison = _shipped("a10-qwen25-7b-rate1")
    del comparison["sweep"]["seed"]
    assert _error(comparison).startswith("s.yaml: missing key sweep.seed;")


def test_only_a_kv_sweep_needs_a_link():
    data = _shipped()
    del data["link"]
    assert "a kv-sweep scenario needs link" in _error(data)
    assert isinstance(scenario_from_dict({**data, "kind": "comparison"}, "s.yaml"), ComparisonScenario)


def test_the_configuration_a_kind_takes():
    sweep = load_scenario("h20-qwen3-235b-1p1d")
    sweep.check_configuration(None)
    with pytest.raises(UserError, match="--configuration applies to comparison scenarios only; h20-qwen3-235b-1p1d is a "
                                        "kv-sweep scenario, drop it"):
        sweep.check_configuration("disaggregated")
    comparison = load_scenario("a10-qwen25-7b-rate1")
    names = sorted(comparison.reference.configurations)
    comparison.check_configuration(names[0])
    with pytest.raises(UserError, match=f"compares configurations; pass --configuration, one of: {', '.join(names)}"):
        comparison.check_configuration(None)


def test_what_a_kind_analyses_and_tells_a_launched_sweep(tmp_path):
    top, run = RunDir(tmp_path), RunDir(tmp_path / "disaggregated")
    sweep, comparison = load_scenario("h20-qwen3-235b-1p1d"), load_scenario("a10-qwen25-7b-rate1")
    assert sweep.analysis_root(top, run) is run
    assert comparison.analysis_root(top, run) is top
    assert sweep.launched_configuration("disaggregated") is None
    assert comparison.launched_configuration("disaggregated") == "disaggregated"
