"""The stages hand each other typed requests, not argument lists rebuilt from words (issue 33 item 3), held by
construction: the arms runner takes no command runner at all, only stages on requests; no runner module builds a
list of command words for a stage; and each request is the one its command line makes, so a runner's stage and
the CLI's command read the same type."""

from __future__ import annotations

import ast
import dataclasses
import inspect
from pathlib import Path

import pytest

from pdrepro import arms, pipeline
from pdrepro.commands import build_parser
from pdrepro.commands.requests import member, stack_request, sweep_request
from pdrepro.core.errors import UserError
from pdrepro.launch.request import RenderRequest
from pdrepro.launch.stack.request import StackDownRequest, StackUpRequest
from pdrepro.rundir.request import AnalyzeRequest, CheckRequest
from pdrepro.stages import Stages

SRC = Path(arms.__file__).parent
# The words that open a `pdrepro` command line: a list literal opening with one of them is a stage's argv.
COMMANDS = {"stack", "sweep", "analyze", "check", "render", "up", "down"}
# Where members' stages are started: none of these spells a stage's command line.
RUNNERS = ("arms.py", "member.py", "stages.py", "commands/ab.py", "commands/tune.py", "commands/compare.py",
           "tune/slurm.py")


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
    assert "judging" in inspect.signature(pipeline.run).parameters


def test_no_runner_spells_a_stages_command_line():
    found = [hit for name in RUNNERS for hit in _argv_literals(SRC / name)]
    # The pipeline's analysis and judging are typed too (its preflight and sweep are not yet).
    found += [hit for hit in _argv_literals(SRC / "pipeline.py") if ": ['analyze'" in hit or ": ['check'" in hit]
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
