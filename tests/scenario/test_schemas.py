"""The shipped JSON Schemas are what the models give, accept what the bundle ships and
writes, and refuse what the loader refuses, so an editor flags the same mistakes."""

import json
import re
from importlib import resources

import jsonschema
import pytest
import yaml
from clihelp import pdrepro
from runbuilder import build_run
from test_comparison import _run_as_published
from test_smoke_summary import _initiator

from pdrepro.analysis.comparison import compute_comparison
from pdrepro.analysis.summarize import compute_summary
from pdrepro.cli import main
from pdrepro.commands.smoke import as_run
from pdrepro.core.errors import UserError
from pdrepro.core.strictmodel import load
from pdrepro.rundir import RunDir
from pdrepro.rundir.summarymodel import Summary, model_for
from pdrepro.scenario import schemagen
from pdrepro.scenario.model import load_scenario, shipped_names
from pdrepro.scenario.smokeplan import make_plan
from pdrepro.smoke.summary import build_summary


def _validator(name):
    schema = json.loads((schemagen.shipped_dir() / schemagen.file_name(name)).read_text())
    return jsonschema.Draft202012Validator(schema)


@pytest.mark.parametrize("name", sorted(schemagen.MODELS))
def test_shipped_schema_is_current(name):
    shipped = (schemagen.shipped_dir() / schemagen.file_name(name)).read_text()
    assert shipped == schemagen.render(name), f"{name} schema is stale: run `make schemas` and commit the result"


def test_schema_command_prints_and_writes_the_same(tmp_path, capsys):
    assert main(["schema", "scenario"]) == 0
    assert capsys.readouterr().out == schemagen.render("scenario")
    assert main(["schema", "--write", str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "ab-summary.schema.json", "baseline.schema.json", "diagnosis.schema.json", "fault-summary.schema.json",
        "load-summary.schema.json", "node-record.schema.json", "scenario.schema.json", "summary.schema.json",
        "tune-summary.schema.json", "verdict.schema.json"]
    assert main(["schema"]) == 2 and "name the schema" in capsys.readouterr().err


@pytest.mark.parametrize("name", shipped_names())
def test_every_shipped_scenario_passes_the_schema(name):
    _validator("scenario").validate(
        yaml.safe_load((resources.files("pdrepro") / "scenarios" / f"{name}.yaml").read_text()))


@pytest.mark.parametrize("change", [
    lambda d: d["sweep"].__setitem__("num_promts", 5),             # unknown key
    lambda d: d["sweep"].__setitem__("random_range_ratio", 1.5),    # above the maximum
    lambda d: d["parallel"].__setitem__("prefill_tp", "eight"),     # not an integer
    lambda d: d["launch"].__setitem__("router_policy", "fastest"),  # not a choice
    lambda d: d["launch"]["ports"].__setitem__("router", 70000),    # not a port
    lambda d: d["sweep"].__delitem__("seed"),                       # missing
])
def test_schema_refuses_what_the_loader_refuses(tmp_path, change):
    data = yaml.safe_load((resources.files("pdrepro") / "scenarios" / "h20-qwen3-235b-1p1d.yaml").read_text())
    change(data)
    assert list(_validator("scenario").iter_errors(data))
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(UserError, match=re.escape(str(path))):
        load_scenario(path)


def _summaries(tmp_path):
    sc = load_scenario("h20-qwen3-235b-1p1d")
    yield "analysis", json.loads(json.dumps(compute_summary(build_run(tmp_path / "run", sc), sc)))
    plan = make_plan(load_scenario("smoke-tcp"), prompt_lens=[128, 4096], repeats=3)
    smoke = build_summary(as_run(load_scenario("smoke-tcp"), plan), _initiator(plan, [0.4, 8.0], [0.3, 7.5]), {})
    yield "smoke", json.loads(json.dumps(smoke))
    cmp = load_scenario("a10-qwen25-7b-rate1")
    yield "comparison", json.loads(json.dumps(compute_comparison(_run_as_published(tmp_path / "cmp", cmp), cmp)))


def test_what_the_bundle_writes_is_a_summary(tmp_path):
    validator = _validator("summary")
    for what, summary in _summaries(tmp_path):
        assert summary["rows"] or what == "comparison"
        model = load(model_for(summary), summary, what)
        assert model.scenario_fingerprint == summary["scenario_fingerprint"]
        validator.validate(summary)


def test_a_summary_of_another_shape_is_one_line(tmp_path):
    summary = dict(next(_summaries(tmp_path))[1])
    summary["issues"] = [{"severity": "fatal", "kind": "x", "message": "m"}]
    with pytest.raises(UserError) as info:
        load(Summary, summary, "RUN/summary.json")
    assert str(info.value) == "RUN/summary.json: issues[0].severity: 'fatal' is not one of error, warning"


def test_a_stored_smoke_summary_is_checked_for_its_shape(tmp_path):
    plan = make_plan(load_scenario("smoke-tcp"), prompt_lens=[128, 4096], repeats=3)
    scenario = as_run(load_scenario("smoke-tcp"), plan)
    run = RunDir(tmp_path / "smoke")
    run.root.mkdir()
    (run.root / "scenario.yaml").write_text(scenario.to_yaml())
    initiator = _initiator(plan, [0.4, 8.0], [0.3, 7.5])
    summary = build_summary(scenario, initiator, {})
    # A smoke's summary is judged beside the smoke's own record (without it, it is refused as no smoke's).
    run.agent_result("initiator").parent.mkdir(parents=True, exist_ok=True)
    run.agent_result("initiator").write_text(json.dumps(initiator))
    run.summary_file.write_text(json.dumps(summary))
    assert pdrepro("check", run.root).rc == 0
    summary["rows"][1]["bandwidth_GB_s"] = "fast"
    run.summary_file.write_text(json.dumps(summary))
    before = run.summary_file.read_bytes()
    # A stored summary of the wrong shape judges nothing: check names the field, draws the verdict from the
    # smoke's own record, and leaves the file as it found it (only `analyze` rewrites it).
    result = pdrepro("check", run.root)
    note = [line for line in result.out.splitlines() if line.startswith("NOTE")]
    assert result.rc == 0 and len(note) == 1 and "rows[1].bandwidth_GB_s" in note[0] and "pdrepro analyze" in note[0]
    assert "expected a number" in note[0] or "valid number" in note[0]
    assert run.summary_file.read_bytes() == before
