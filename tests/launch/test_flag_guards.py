"""Guards compare meaning, not spelling (issue 33, item 5), as a user meets them: `pdrepro tune`, `ab`,
`stack up` and `render` run as a user runs them (a subprocess; the stand-in servers where a stack really
starts). A server flag the launch plan owns is refused under an alias or an abbreviation SGLang's parser
takes; a flag given twice through routes that disagree names both places; a grid knob is checked against the
backend --stack-args picks; a command-line --server-arg over the scenario's own flag wins and is recorded."""

from __future__ import annotations

import json

import pytest
import yaml
from stackhelp import SCENARIO, make_site, one_line, pdrepro, stack, up

from pdrepro.launch.stack import record


@pytest.fixture
def box(tmp_path):
    """The shipped one-box scenario on free ports; whatever a test started is taken down after it."""
    made = make_site(tmp_path)
    yield made
    if record.path(made["run"]).is_file():
        stack("down", str(made["run"]), "--grace", "1")


def _model(tmp) -> list[str]:
    model, data = tmp / "model", tmp / "data.json"
    model.mkdir()
    (model / "config.json").write_text("{}")
    data.write_text("[]")
    return ["--model", str(model), "--dataset", str(data)]


def _refused(done, *says: str) -> str:
    line = one_line(done)
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    for text in says:
        assert text in line, line
    return line


@pytest.mark.parametrize(("grid", "says"), [
    ("--grid=--model=/elsewhere", ["--grid --model", "an alias of --model-path", "sets itself", "vary another flag"]),
    ("--grid=--tensor-parallel-size=2", ["--grid --tensor-parallel-size", "an alias of --tp-size", "sets itself",
                                         "vary another flag"]),
    ("--grid=--disaggregation-mod=decode", ["--grid --disaggregation-mod", "abbreviation",
                                            "expands to --disaggregation-mode", "vary another flag"]),
    ("--grid=--mem-frac=0.3,0.4", ["--grid --mem-frac", "expands to --mem-fraction-static"]),
    ("--grid=--config=/tmp/x.yaml", ["--grid --config", "reads flags from a file"]),
    ("--grid=--page-sise=1,16", ["'--page-sise' is no flag of SGLang"]),
    ("--grid=--d=1,16", ["--d is an ambiguous abbreviation", "spell the flag out"]),
])
def test_tune_refuses_an_owned_flag_under_any_spelling_before_anything_starts(tmp_path, grid, says):
    done = pdrepro("tune", grid, *_model(tmp_path), "--out", str(tmp_path / "run"))
    _refused(done, *says)
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(("route", "place"), [
    (["--stack-args=--server-arg='--page-size 1'"], "--stack-args' --server-arg '--page-size 1' (1)"),
    (["--server-arg=--page 1"], "--server-arg '--page 1' (1)"),
    (["--stack-args=--server-a='--page-size=1'"], "--stack-args' --server-arg '--page-size=1' (1)"),
])
def test_a_grid_flag_also_given_by_another_route_names_both_places(tmp_path, route, place):
    done = pdrepro("tune", "--grid=--page-size=16", *route, *_model(tmp_path), "--out", str(tmp_path / "run"))
    _refused(done, "--grid --page-size", place, "give it once, in the grid")
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("backend", ["--transfer-backend nixl", "--transfer-b=nixl"])
def test_a_mooncake_knob_under_the_nixl_backend_stack_args_pick_is_refused(tmp_path, backend):
    done = pdrepro("tune", "--grid", "MC_SLICE_SIZE=65536,131072", f"--stack-args={backend}", *_model(tmp_path),
                   "--out", str(tmp_path / "run"))
    _refused(done, "--grid MC_SLICE_SIZE", "read by Mooncake", "--stack-args' --transfer-backend nixl")
    assert not (tmp_path / "run").exists()


def test_the_same_mooncake_knob_under_mooncake_is_taken(tmp_path):
    # The control: the knob is refused for the backend, not for itself (the run stops later, at its missing stack).
    done = pdrepro("tune", "--render", "slurm", "--scenario", "h20-qwen3-235b-1p1d", "--grid",
                   "MC_SLICE_SIZE=65536,131072", "--stack-args=--transfer-backend mooncake", "--out", str(tmp_path / "run"))
    assert done.returncode == 0, done.stderr
    assert "MC_SLICE_SIZE" in (tmp_path / "run" / "scenarios" / "s1.yaml").read_text()


def test_ab_refuses_an_owned_flag_by_alias_before_any_arm(tmp_path):
    done = pdrepro("ab", "--backends", "mooncake_tcp,nixl", "--server-arg=--tensor-parallel-size 2",
                   *_model(tmp_path), "--out", str(tmp_path / "run"))
    _refused(done, "--server-arg '--tensor-parallel-size 2'", "an alias of --tp-size", "sets itself")
    assert not (tmp_path / "run").exists()


def test_compare_refuses_an_abbreviated_owned_flag_before_any_configuration(tmp_path):
    done = pdrepro("compare", "--scenario", "a10-qwen25-7b-onebox-rate1", "--server-arg=--tp 2", *_model(tmp_path),
                   "--out", str(tmp_path / "run"))
    _refused(done, "--server-arg '--tp 2'", "expands to --tp-size", "sets itself")
    assert not (tmp_path / "run").exists()


def test_stack_up_refuses_an_abbreviated_owned_flag_and_starts_nothing(box):
    done = up(box, "--server-arg=--disaggregation-mod decode")
    _refused(done, "--server-arg", "--disaggregation-mod", "expands to --disaggregation-mode")
    assert not record.path(box["run"]).exists()


def test_a_scenario_setting_an_owned_flag_by_alias_is_refused_where_it_is_loaded(tmp_path):
    data = yaml.safe_load(SCENARIO.read_text())
    data["launch"]["extra_server_args"] = ["--tensor-parallel-size", "2"]
    scenario = tmp_path / "s.yaml"
    scenario.write_text(yaml.safe_dump(data, sort_keys=False))
    done = pdrepro("render", "--target", "onebox", "--scenario", str(scenario), "--gpus", "0",
                   "--out", str(tmp_path / "out"))
    _refused(done, "launch.extra_server_args", "--tensor-parallel-size", "an alias of --tp-size")
    assert not (tmp_path / "out").exists()


def test_a_command_line_server_arg_overrides_the_scenario_and_the_record_says_so(box):
    path = box["tmp"] / "onebox-test.yaml"
    scenario = yaml.safe_load(path.read_text())
    scenario["launch"]["extra_server_args"] = ["--page-size", "1"]
    path.write_text(yaml.safe_dump(scenario, sort_keys=False))
    done = up(box, "--server-arg=--page 16")
    assert done.returncode == 0, done.stderr
    held = json.loads(record.path(box["run"]).read_text())
    assert held["server_arg_overrides"] == ["--page-size: the scenario's 1, --server-arg's 16"]
    assert "overrides the scenario's flag --page-size" in done.stdout + done.stderr
    prefill = next(p for p in held["processes"] if p["name"].startswith("prefill"))
    argv = prefill["argv"]
    # The command line's spelling comes last, so the server's parser takes its value.
    assert argv.index("--page") > argv.index("--page-size")
