"""`stack up --help` names the exact `pdrepro render` command whose plan it starts, and every stack
verb's help says which scenario it uses by default."""

from __future__ import annotations

import re
import shlex
import sys

import pytest
from render_targets import host_commands

from pdrepro.cli import main
from pdrepro.commands import build_parser
from pdrepro.commands.render import onebox_plan
from pdrepro.launch.stack import up as launcher
from pdrepro.scenario.model import load_scenario


def _help(capsys, *verb: str) -> str:
    with pytest.raises(SystemExit) as done:
        main(["stack", *verb, "--help"])
    assert done.value.code == 0
    return " ".join(capsys.readouterr().out.split())


def _default_scenario() -> str:
    args = build_parser().parse_args(["stack", "up", "--out", "x"])
    return args.scenario


def test_up_names_the_render_command_it_starts_and_it_runs(capsys, tmp_path):
    text = _help(capsys, "up")
    quoted = re.search(r"`(pdrepro render [^`]+)`", text)
    assert quoted, text
    words = shlex.split(quoted.group(1))
    assert words[words.index("--scenario") + 1] == _default_scenario() == "onebox-qwen25-0.5b"
    assert words[words.index("--target") + 1] == "onebox" and words[words.index("--launcher") + 1] == "host"
    assert f"Default scenario: {_default_scenario()}." in text
    # The command as the help writes it prints the very processes `stack up` (all defaults) starts.
    assert main([*words[1:], "--out", str(tmp_path / "deploy")]) == 0
    rendered = host_commands((tmp_path / "deploy" / "commands.txt").read_text())
    args = build_parser().parse_args(["stack", "up", "--out", str(tmp_path / "run")])
    lp = onebox_plan(args, load_scenario(args.scenario), python=sys.executable).launch_plan()
    started = {step.role.value: list(step.argv) for step in launcher.steps(lp)}
    assert started == {role: argv for role, (_env, argv) in rendered.items()}


@pytest.mark.parametrize("verb", ["down", "status"])
def test_down_and_status_say_their_scenario_is_the_records(capsys, verb):
    assert "The scenario is the one RUN/stack.json records (no default)." in _help(capsys, verb)
