"""The stages hand each other typed requests, not argument lists rebuilt from words (issue 33 item 3), held by
construction: the arms runner takes no command runner at all, only stages on requests; no runner module builds a
list of command words for a stage; and each request is the one its command line makes, so a runner's stage and
the CLI's command read the same type."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import shlex
from pathlib import Path

import pytest

from pdrepro import arms, pipeline
from pdrepro.commands import build_parser
from pdrepro.commands.requests import member, pipeline_sweep_request, stack_request, sweep_request
from pdrepro.core.errors import UserError
from pdrepro.fabric.request import DoctorRequest, PairRequest, doctor_request
from pdrepro.launch.request import RenderRequest
from pdrepro.launch.stack.request import StackDownRequest, StackUpRequest
from pdrepro.rundir.request import AnalyzeRequest, CheckRequest
from pdrepro.stages import Reproduction, Stages
from pdrepro.sweep.request import SweepRequest

SRC = Path(arms.__file__).parent
# The words that open a `pdrepro` command line: a list literal opening with one of them is a stage's argv.
COMMANDS = {"stack", "sweep", "analyze", "check", "render", "up", "down", "doctor"}
# Where stages are started (members' and the reproduction pipeline's): none of these spells a stage's command line.
RUNNERS = ("arms.py", "member.py", "stages.py", "commands/ab.py", "commands/tune.py", "commands/compare.py",
           "tune/slurm.py", "pipeline.py", "commands/repro.py", "commands/requests.py")


def _argv_literals(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.List, ast.Tuple)) and node.elts:
            head = node.elts[0]
            if isinstance(head, ast.Constant) and head.value in COMMANDS and len(node.elts) > 1:
                found.append(f"{path.relative_to(SRC)}:{node.lineno}: {ast.unparse(node)[:60]}")
    return found


def test_the_arms_runner_is_handed_stages_not_a_command_runner():
    for func in (arms.run_arms, arms.clear_leftovers):
        params = inspect.signature(func).parameters
        assert "cli" not in params and "stages" in params, func.__name__
    assert [f.name for f in dataclasses.fields(Stages)] == ["stack_up", "sweep", "stack_down", "analyze"]
    # The pipeline too: every stage of it (preflight, pair check, sweep, analysis, judging) is handed a request.
    params = inspect.signature(pipeline.run).parameters
    assert "cli" not in params and "judging" not in params and "stages" in params
    assert [f.name for f in dataclasses.fields(Reproduction)] == ["doctor", "pair", "sweep", "judging"]


def test_no_runner_spells_a_stages_command_line():
    found = [hit for name in RUNNERS for hit in _argv_literals(SRC / name)]
    assert found == []


def test_the_check_would_see_a_stage_spelled_in_words(tmp_path):
    # The same walk finds the spelling the runner used to have: the check can fail.
    (tmp_path / "old.py").write_text('cli(["stack", "up", *arm.stack, "--out", str(folder)])\n')
    global SRC
    kept, SRC = SRC, tmp_path
    try:
        assert len(_argv_literals(tmp_path / "old.py")) == 1
    finally:
        SRC = kept


@pytest.mark.parametrize(("argv", "request_type"), [
    (["stack", "up", "--out", "/r/a", "--gpus", "0", "--server-arg=--x 1", "--poll", "0.5"], StackUpRequest),
    (["stack", "down", "/r/a", "--grace", "3"], StackDownRequest),
    (["analyze", "/r", "--scenario", "s"], AnalyzeRequest),
    (["check", "/r", "--thresholds", "t.yaml", "--json"], CheckRequest),
    (["render", "--target", "slurm", "--server-arg=--x 1", "--run-dir", "/r/a/b"], RenderRequest),
])
def test_every_option_of_a_stage_is_a_field_of_its_request(argv, request_type):
    parsed = build_parser().parse_args(argv)
    dests = set(vars(parsed)) - {"command", "verb"}
    assert dests == {f.name for f in dataclasses.fields(request_type)}
    request = request_type.from_args(parsed)
    assert request_type.from_args(request) is request and isinstance(request, request_type)
    with pytest.raises(dataclasses.FrozenInstanceError):
        request.func = None  # type: ignore[misc]


def test_every_option_of_doctor_is_a_field_of_one_of_its_requests():
    words = ["--role", "decode", "--model", "/m", "--dataset", "/d.json", "--scenario", "s", "--out", "/r/n.json"]
    node = build_parser().parse_args(["doctor", *words])
    assert set(vars(node)) - {"command"} == {f.name for f in dataclasses.fields(DoctorRequest)} | {
        f.name for f in dataclasses.fields(PairRequest)}
    request = doctor_request(node)
    assert request == DoctorRequest(role="decode", model=Path("/m"), dataset=Path("/d.json"), scenario="s",
                                    out=Path("/r/n.json")) and doctor_request(request) is request
    pair = doctor_request(build_parser().parse_args(["doctor", "--pair", "p.json", "d.json", "--deploy", "dep"]))
    assert pair == PairRequest(pair=(Path("p.json"), Path("d.json")), deploy=Path("dep"))
    # --deploy without --pair is refused where the command line becomes a request, as the command refused it.
    with pytest.raises(UserError, match="^--deploy is read by the pair check only"):
        doctor_request(build_parser().parse_args(["doctor", "--deploy", "dep"]))


def test_the_pipelines_sweep_is_the_request_its_command_line_makes():
    fields = {"scenario": "s", "router": "http://r", "out": "/r", "model_path": "/m", "dataset_path": "/d"}
    typed = pipeline_sweep_request(["--metrics", "--worker", "http://w", "--router", "http://later"], **fields)
    cli = SweepRequest.from_args(build_parser().parse_args([
        "sweep", "--scenario", "s", "--router", "http://r", "--out", "/r", "--model-path", "/m", "--dataset-path", "/d",
        "--metrics", "--worker", "http://w", "--router", "http://later"]))
    assert typed == cli and typed.router == "http://later"  # as on a command line, the later flag wins
    # Its display (the command a person could rerun) is drawn from the request and reads back to the same request.
    shown = shlex.split(typed.command_line())
    assert shown[:2] == ["pdrepro", "sweep"]
    assert SweepRequest.from_args(build_parser().parse_args(shown[1:])) == typed
    with pytest.raises(UserError, match=r"^no --dataset-path: pass it$"):
        pipeline_sweep_request(missing_fix="no {flag}: pass it", **{**fields, "dataset_path": None})


def test_a_members_stack_is_the_request_its_command_line_makes():
    words = ["--scenario", "x.yaml", "--gpus", "0", "--server-arg=--a 1", "--server-arg=--b", "--poll", "0.1"]
    cli = StackUpRequest.from_args(build_parser().parse_args(["stack", "up", *words, "--out", "/r/m"]))
    typed = stack_request(["--server-arg=--b", "--poll", "0.1"], out=Path("/r/m"), scenario="x.yaml", gpus="0",
                          server_arg=["--a 1"])
    assert typed == cli
    # The state's record of it: the flags that ask for it, without the folder the runner gives.
    assert typed.words() == ("--scenario", "x.yaml", "--gpus", "0", "--server-arg=--a 1", "--server-arg=--b",
                             "--poll", "0.1")


@pytest.mark.parametrize("words", [["--router", "http://x"], ["--out", "/elsewhere"], ["--configuration", "1P1D"],
                                   ["--worker=http://w"]])
def test_words_that_set_what_the_runner_sets_are_refused_on_one_line(words):
    with pytest.raises(UserError, match=r"^--sweep-args sets --\w+, which the runner sets on each member itself"):
        sweep_request(words, out=Path("/r/m"), scenario="s", model_path="/m", dataset_path="/d")
    with pytest.raises(UserError, match=r"^--stack-args sets --out"):
        stack_request(["--out", "/elsewhere"], out=Path("/r/m"))


def test_bad_words_are_one_line_naming_where_they_came_from():
    with pytest.raises(UserError, match=r"^--sweep-args: unrecognized arguments: --bogus; give flags `pdrepro sweep`"):
        sweep_request(["--bogus"], out=Path("/r/m"), scenario="s", model_path="/m", dataset_path="/d")


def test_a_member_is_placed_and_recorded_by_its_fields():
    run = Path("/r")
    one = member(run, "1P1D", configuration="1P1D", stack={"stack": "regular", "scenario": "s"},
                 sweep={"scenario": "s", "model_path": "/m", "dataset_path": "/d", "no_analyze": True})
    one.check(run)
    assert one.folder == run / "1P1D" and one.sweep.out == run and one.sweep.configuration == "1P1D"
    assert one.analysis() is None and one.down() == StackDownRequest(run / "1P1D")
    record = one.record()
    assert record.stack == ("--scenario", "s", "--stack", "regular")
    assert "--no-analyze" in record.sweep and "--out" not in record.sweep and "--configuration" not in record.sweep
    with pytest.raises(UserError, match="the arms runner places each member"):
        one.check(Path("/elsewhere"))
