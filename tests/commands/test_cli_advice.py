"""Every command line the bundle prints as advice runs as printed (issue 34, item 3).

Two nets. The lines a message builds (pdrepro.core.advice) each parse against the real command line, required
inputs and choices included, with their placeholders filled; the engine-alone refusal's line names the scenario
whose bytes the run moved; `check` and a tune's `--judge` line are run on recorded runs. And every `pdrepro ...`
or `make ...` a string of the package quotes (an error, a note, a report, a help text) names a command, a verb
and flags that exist, and a make target the Makefile has: a renamed flag cannot leave a stale hint behind."""

from __future__ import annotations

import argparse
import ast
import inspect
import re
import shlex
from pathlib import Path

import pytest
from clihelp import pdrepro

from pdrepro import pipeline
from pdrepro.commands import build_parser
from pdrepro.core import advice
from pdrepro.rundir import engineceiling
from pdrepro.scenario.model import load_scenario

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "pdrepro"
RECORDED = ROOT / "tests" / "recorded"
QUOTED = re.compile(r"`((?:pdrepro|make) [^`]*)`")
# What a formatted value of an f-string reads as here: one plain word.
VALUE = "VALUE"


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    return next((dict(a.choices) for a in parser._actions if isinstance(a, argparse._SubParsersAction)), {})


def _make_targets() -> set[str]:
    files = [ROOT / "Makefile", *ROOT.glob("*/*.mk")]
    return {m for f in files for m in re.findall(r"^([A-Za-z0-9_.-]+)\s*:(?!=)", f.read_text(), re.M)}


def _filled(line: str, root: Path) -> list[str]:
    """``line``'s words with its placeholders filled as a reader fills them (RUN: a folder, PEER: an address)."""
    words = shlex.split(line)
    assert all(w not in ("...", "<", ">") and not w.startswith("<") for w in words), f"an unfilled gap in {line!r}"
    return [w.replace(advice.RUN, str(root)).replace(advice.PEER, "127.0.0.1") for w in words]


# ---- the lines the messages build --------------------------------------------------------------------------

def test_every_builder_has_an_example():
    builders = {name for name, f in inspect.getmembers(advice, inspect.isfunction)
                if f.__module__ == advice.__name__ and name not in ("examples", "pdrepro", "make")}
    named = {name.split()[0] for name in advice.examples()}
    assert builders and builders <= named, f"builders without an example in advice.examples(): {builders - named}"


@pytest.mark.parametrize("name, line", sorted(advice.examples().items()))
def test_each_built_line_parses_as_printed(name, line, tmp_path):
    words = _filled(line, tmp_path)
    if words[0] == "make":
        assert words[1] in _make_targets(), line
        return
    assert words[0] == "pdrepro", line
    try:
        build_parser().parse_args(words[1:])  # flags, choices and required inputs as the command checks them
    except SystemExit as exc:
        pytest.fail(f"{name}: `{line}` does not parse (exit {exc.code})")


def test_a_run_folder_with_a_space_stays_one_word():
    assert shlex.split(advice.analyze("/runs/my run")) == ["pdrepro", "analyze", "/runs/my run"]
    assert shlex.split(advice.gpu_check("a b.yaml", "c d", "bogus"))[-2:] == ["--out", "c d"]  # unknown: left out


def _engine_line(run: Path) -> list[str]:
    """The gpu-check line the refusal of a damaged engine ceiling in ``run`` prints, filled for ``run``."""
    (run / "engine-ceiling").mkdir(parents=True)
    (run / "engine-ceiling" / "result.json").write_text("{not json")
    with pytest.raises(engineceiling.CeilingError) as refused:
        engineceiling.load_ceiling(run)
    lines = [m for m in QUOTED.findall(str(refused.value)) if m.startswith("pdrepro gpu-check")]
    assert len(lines) == 1, str(refused.value)
    return _filled(lines[0], run)


@pytest.mark.parametrize("kind", ["sweep run", "tune"])
def test_the_engine_ceiling_refusal_names_the_runs_own_scenario(kind, tmp_path):
    scenario = load_scenario("h20-qwen3-235b-1p1d")  # not gpu-check's default: its bytes differ
    run = tmp_path / "the run"
    own = run / ("scenario.yaml" if kind == "sweep run" else "scenarios/baseline.yaml")
    own.parent.mkdir(parents=True)
    own.write_text(scenario.to_yaml())
    args = build_parser().parse_args(_engine_line(run)[1:])
    assert Path(args.scenario) == own and Path(args.out) == run / "engine-ceiling"
    measured = load_scenario(args.scenario)
    default = load_scenario(build_parser().parse_args(["gpu-check"]).scenario)
    assert measured.kv_bytes_per_token == scenario.kv_bytes_per_token != default.kv_bytes_per_token


def test_the_transport_mismatch_line_measures_the_same_folder_and_bytes(tmp_path):
    line = engineceiling.transport_mismatch("engine-ceiling-2/result.json", "rdma", "tcp",
                                            "RUN/scenarios/baseline.yaml")
    (found,) = QUOTED.findall(line)
    args = build_parser().parse_args(_filled(found, tmp_path)[1:])
    assert (args.transport, Path(args.out), Path(args.scenario)) == \
           ("tcp", tmp_path / "engine-ceiling-2", tmp_path / "scenarios" / "baseline.yaml")


def test_repro_takes_every_sweep_flag_it_names_in_its_refusal():
    # `pdrepro repro {flag} ...` is printed for each flag --sweep-args may not set (but --no-analyze).
    repro = _subparsers(build_parser())["repro"]
    missing = [f for f in pipeline.OWN_SWEEP_FLAGS if f != "--no-analyze" and f not in repro._option_string_actions]
    assert not missing


def test_the_check_line_runs_as_printed_on_a_recorded_run():
    run = RECORDED / "h200-onebox-host-sglang-0.5.15.post1"
    words = shlex.split(advice.check(run))
    done = pdrepro(*words[1:])
    assert done.rc in (0, 1), done.err  # a verdict, not a refusal of the line
    assert "Traceback" not in done.err


def test_the_tune_judge_line_runs_as_printed_on_the_recorded_tune():
    words = shlex.split(advice.judge("tune", RECORDED / "h200-tune-0.5b-mooncake-tcp-sglang-0.5.15.post1" / "tune"))
    if not Path(words[-1]).is_dir():
        pytest.fail(f"the recorded tune is not at {words[-1]}")
    done = pdrepro(*words[1:])
    assert done.rc in (0, 1), done.err
    assert "Traceback" not in done.err


# ---- every command line the package's strings quote ---------------------------------------------------------

def _strings(tree: ast.AST):
    """Each string of the source with the line it starts on; an f-string's values read as one word."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.lineno, node.value
        elif isinstance(node, ast.JoinedStr):
            yield node.lineno, "".join(v.value if isinstance(v, ast.Constant) else VALUE for v in node.values)


def _quoted_lines() -> list[tuple[str, str]]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for lineno, text in _strings(ast.parse(path.read_text())):
            found += [(f"{path.relative_to(ROOT)}:{lineno}", m) for m in QUOTED.findall(text)]
    return found


def _problem(line: str, commands: dict[str, argparse.ArgumentParser], targets: set[str]) -> str | None:
    try:
        words = shlex.split(line)
    except ValueError as exc:
        return f"not shell words ({exc})"
    if words[0] == "make":
        return None if words[1] in targets else f"no make target {words[1]}"
    if words[1].startswith("-") or words[1] == VALUE:
        return None  # `pdrepro --help`, or a command line the message was handed (checked where it was built)
    parser = commands.get(words[1])
    if parser is None:
        return f"no command {words[1]}"
    rest = words[2:]
    verbs = _subparsers(parser)
    if verbs and rest and "|" in rest[0]:  # `stack up|down|status`: each of them
        absent = [v for v in rest[0].split("|") if v not in verbs]
        return f"no verb {', '.join(absent)} of {words[1]}" if absent else None
    if verbs and rest and rest[0] in verbs:
        parser, rest = verbs[rest[0]], rest[1:]
    elif verbs and rest and not rest[0].startswith("-") and rest[0] != VALUE:
        return f"no verb {rest[0]} of {words[1]}"
    unknown = [w for w in rest if w.startswith("--") and w.split("=", 1)[0] not in parser._option_string_actions
               and w.split("=", 1)[0] != "--" + VALUE]
    return f"no option {', '.join(unknown)}" if unknown else None


def test_the_scan_finds_the_quoted_lines():
    lines = [line for _, line in _quoted_lines()]
    assert len(lines) > 40
    assert any(line.startswith("pdrepro gpu-check --scenario") for line in lines)


def test_the_scan_would_see_a_stale_flag():
    commands = _subparsers(build_parser())
    assert _problem("pdrepro tune --grids X=1", commands, set()) == "no option --grids"
    assert _problem("pdrepro stack upp --out RUN", commands, set()) == "no verb upp of stack"
    assert _problem("pdrepro stack up|halt", commands, set()) == "no verb halt of stack"
    assert _problem("make no-such-target", commands, {"test"}) == "no make target no-such-target"


def test_every_quoted_command_line_names_what_exists():
    commands, targets = _subparsers(build_parser()), _make_targets()
    stale = [f"{where}: `{line}`: {why}" for where, line in _quoted_lines()
             if (why := _problem(line, commands, targets)) is not None]
    assert not stale, "\n".join(stale)
