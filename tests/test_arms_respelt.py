"""A run of arms an older bundle started, resumed as a user meets it: RUN/arms-state.json on disk with the arms'
words in another spelling (flags reordered, ``0.10`` for ``0.1``, ``--server-arg X`` for ``--server-arg=X``,
defaults given outright), the arms runner in a child process with the CLI's stages and its comparison
(tests/armsscript.py), real `stack up` and `stack down` of the stand-in servers on 127.0.0.1. The same requests
resume (the arm done is skipped, the state rewritten in this bundle's words, said on one line); a real change is
refused naming the arm, the field and both values; words that no longer read are refused on one line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from memberhelp import flag_groups, member
from stackhelp import env, make_site, stop_left

from pdrepro.launch.stack import record
from pdrepro.rundir import armsstate

TESTS = Path(__file__).resolve().parent
SCRIPT = TESTS / "armsscript.py"
STACK_DEFAULTS = ("--stack", "disaggregated", "--start-timeout", "3600", "--progress-every", "10.0")
SWEEP_DEFAULTS = ("--on-failure", "continue", "--prefill-container", "pdrepro-prefill")


def _arms(site: dict) -> list[dict]:
    options = [o for o in site["options"] if o != "--force-tcp"]
    stack = ["--target", "onebox", "--launcher", "host", *options, "--poll", "0.1", "--grace", "5"]
    sweep = ["--scenario", options[1], "--model-path", str(site["model"]), "--dataset-path", "/nonexistent.json"]
    return [{"name": "tcp", "stack": [*stack, "--force-tcp"], "sweep": sweep}, {"name": "plain", "stack": stack,
                                                                               "sweep": sweep}]


def _older(words: tuple[str, ...], defaults: tuple[str, ...]) -> list[str]:
    """This bundle's words as an older one wrote them: the flags backwards, a float with a trailing zero, a server
    flag as its option and a separate word, the stack kind and timeouts given at their defaults."""
    out = list(defaults)
    for group in reversed(flag_groups(words)):
        flag, _, value = group[0].partition("=")
        out += [flag, value] if value else [{"0.1": "0.10", "5": "5.0"}.get(w, w) for w in group]
    return out


@pytest.fixture
def site(tmp_path):
    made = make_site(tmp_path)
    yield made
    stop_left(made["run"] / arm for arm in ("tcp", "plain"))


def _plant(site: dict, change=lambda name, stack: stack) -> tuple[Path, Path]:
    """The spec this run asks for, and an older bundle's state of it in RUN: arm tcp done, arm plain pending."""
    run, arms = site["run"], _arms(site)
    spec = site["tmp"] / "spec.json"
    spec.write_text(json.dumps({"label": "test AB", "arms": arms}))
    ours = [member(run, a["name"], a["stack"], a["sweep"]).record() for a in arms]
    run.mkdir()
    data = {"schema_version": 1, "label": "test AB", "arms": [
        {"name": r.name, "stack": change(r.name, _older(r.stack, STACK_DEFAULTS)), "sweep": _older(r.sweep, SWEEP_DEFAULTS),
         **({"status": "done", "exit": 0} if r.name == "tcp" else {})} for r in ours]}
    armsstate.path(run).write_text(json.dumps(data))
    return spec, armsstate.path(run)


def _run(site: dict, spec: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), "arms", str(site["run"]), str(spec)],
                          env=env(ARMS_FAKE_LOG=str(site["tmp"] / "sweeps.txt")), capture_output=True, text=True,
                          cwd=TESTS.parent, timeout=180)


def _swept(site: dict) -> list[str]:
    log = site["tmp"] / "sweeps.txt"
    return [line.split()[0] for line in log.read_text().splitlines()] if log.exists() else []


def test_an_older_spelling_of_the_same_arms_resumes_and_is_rewritten(site):
    spec, path = _plant(site)
    was = armsstate.read(site["run"])
    assert was is not None and "--server-arg" in was.arm("plain").stack  # the older, separate spelling
    done = _run(site, spec)
    assert done.returncode == 0, done.stdout + done.stderr
    said = [line for line in done.stdout.splitlines() if "recorded in other words for the same requests" in line]
    assert len(said) == 1 and str(path) in said[0], done.stdout
    assert "== arm tcp: done already, skipped" in done.stdout
    assert _swept(site) == ["plain"]
    state = armsstate.read(site["run"])
    assert state is not None and [(a.name, a.status) for a in state.arms] == [("tcp", "done"), ("plain", "done")]
    ours = [member(site["run"], a["name"], a["stack"], a["sweep"]).record() for a in _arms(site)]
    assert [(a.stack, a.sweep) for a in state.arms] == [(a.stack, a.sweep) for a in ours]
    again = _run(site, spec)  # in this bundle's words now: nothing to say, nothing to run
    assert again.returncode == 0 and "recorded in other words" not in again.stdout
    assert _swept(site) == ["plain"]


def _gpus(name: str, stack: list[str]) -> list[str]:
    return [("1" if name == "plain" and stack[i - 1] == "--gpus" else w) for i, w in enumerate(stack)]


def _server(name: str, stack: list[str]) -> list[str]:
    return [("--attention-backend flashinfer" if w == "--attention-backend triton" else w) for w in stack]


def _garbage(name: str, stack: list[str]) -> list[str]:
    return [*stack, "--no-such-flag", "x"] if name == "tcp" else stack


@pytest.mark.parametrize("change, line", [
    (_gpus, "arm plain: its stack's --gpus was '1' and is now '0'; give another --out"),
    (_server, "arm tcp: its stack's --server-arg was ['--attention-backend flashinfer'] and is now "
              "['--attention-backend triton']; give another --out"),
    (_garbage, "arm tcp: its recorded stack words no longer read as this bundle's flags (unrecognized arguments: "
               "--no-such-flag x); give another --out"),
], ids=["gpus", "server-arg", "garbage"])
def test_another_request_or_unreadable_words_are_refused_on_one_line(site, change, line):
    spec, path = _plant(site, change)
    before = path.read_bytes()
    refused = _run(site, spec)
    assert refused.returncode == 2
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and f"{path}: {line}" in lines[0], refused.stderr
    assert "Traceback" not in refused.stderr
    assert path.read_bytes() == before and _swept(site) == []
    assert not record.path(site["run"] / "plain").exists(), "a refused state started an arm"
