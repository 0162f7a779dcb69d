"""One default per question: `render --target onebox` places the one-box scenario (the one `stack up` starts),
the cluster targets the published run, and every command's help names the scenario it uses by default."""

from __future__ import annotations

import argparse
import subprocess
from pathlib import Path

import pytest
from clihelp import pdrepro

from pdrepro.commands import build_parser
from pdrepro.commands.render import ONEBOX_SCENARIO, PUBLISHED_SCENARIO, default_scenario
from pdrepro.scenario.model import shipped_names


def _subparsers(parser: argparse.ArgumentParser):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield sub
                yield from _subparsers(sub)


def _scenario_option(parser: argparse.ArgumentParser) -> argparse.Action | None:
    return next((a for a in parser._actions if "--scenario" in a.option_strings), None)


@pytest.mark.parametrize(("target", "extra", "expected"), [
    ("onebox", ["--launcher", "host"], ONEBOX_SCENARIO),
    ("onebox", [], ONEBOX_SCENARIO),
    ("compose", ["--prefill-ip", "10.0.0.1", "--decode-ip", "10.0.0.2"], PUBLISHED_SCENARIO),
    ("slurm", [], PUBLISHED_SCENARIO),
    ("k8s", [], PUBLISHED_SCENARIO),
])
def test_render_without_scenario_renders_the_targets_default(tmp_path, target, extra, expected):
    implicit = pdrepro("render", "--target", target, *extra, "--out", tmp_path / "a")
    explicit = pdrepro("render", "--target", target, *extra, "--scenario", expected, "--out", tmp_path / "b")
    assert implicit.rc == explicit.rc == 0, implicit.err
    assert implicit.out.replace(str(tmp_path / "a"), "OUT") == explicit.out.replace(str(tmp_path / "b"), "OUT")
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == sorted(p.name for p in (tmp_path / "b").iterdir())
    for path in (tmp_path / "a").iterdir():
        assert path.read_text() == (tmp_path / "b" / path.name).read_text().replace(str(tmp_path / "b"), str(tmp_path / "a"))


def test_render_onebox_and_stack_up_share_their_default():
    stack = next(p for p in _subparsers(build_parser()) if p.prog.endswith("stack up"))
    option = _scenario_option(stack)
    assert option is not None and option.default == default_scenario("onebox") == ONEBOX_SCENARIO
    assert {ONEBOX_SCENARIO, PUBLISHED_SCENARIO} <= set(shipped_names())


def test_every_scenario_option_names_its_default_in_its_help():
    options = [(p.prog, _scenario_option(p)) for p in _subparsers(build_parser())]
    options = [(prog, o) for prog, o in options if o is not None]
    assert len(options) >= 8, [prog for prog, _ in options]
    for prog, option in options:
        help_text = (option.help or "") % {"default": option.default}
        if option.required:
            continue  # argparse's usage line says it must be given: there is no default to name
        if option.default is None:
            assert "default" in help_text, f"{prog} --scenario: its help does not say what it uses when not given"
        else:
            assert str(option.default) in help_text, f"{prog} --scenario: its help does not name {option.default}"
    render = next(o for prog, o in options if prog.endswith(" render"))
    assert f"{ONEBOX_SCENARIO} for --target onebox" in render.help and PUBLISHED_SCENARIO in render.help


# The commands that serve or measure a one-box run; `compare` names its scenarios (required), so it has none to agree.
ONEBOX_COMMANDS = ("pdrepro gpu-check", "pdrepro stack up", "pdrepro offline-model", "pdrepro ab", "pdrepro tune")


def test_every_one_box_command_defaults_to_the_one_box_scenario():
    defaults = {p.prog: o.default for p in _subparsers(build_parser()) if (o := _scenario_option(p)) is not None}
    assert set(ONEBOX_COMMANDS) <= set(defaults), sorted(defaults)
    differ = {prog: defaults[prog] for prog in ONEBOX_COMMANDS if defaults[prog] != ONEBOX_SCENARIO}
    assert not differ, f"one-box commands whose default is not {ONEBOX_SCENARIO}: {differ}"
    assert default_scenario("onebox") == ONEBOX_SCENARIO


def test_make_gpu_check_names_the_published_scenario():
    # `make gpu-check` means the published run's sizes: it says so, since the command alone now means the one box.
    dry = subprocess.run(["make", "-n", "gpu-check"], capture_output=True, text=True, timeout=60,
                         cwd=Path(__file__).resolve().parents[2]).stdout
    assert f'gpu-check --scenario "{PUBLISHED_SCENARIO}"' in dry, dry
