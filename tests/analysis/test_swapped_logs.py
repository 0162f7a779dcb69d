"""Prefill and decode logs given the wrong way round are named as swapped: each log's latest start says which
role its server ran (disaggregation_mode), so `analyze` and `check` refuse on one line (exit 2) instead of reading
a decode log for the prefill's transfers. A log of the other role where only one belongs is named too."""

from __future__ import annotations

import pytest
from clihelp import pdrepro
from runbuilder import build_run, sweep_provenance

from pdrepro.scenario.model import load_scenario

SCENARIO = load_scenario("h20-qwen3-235b-1p1d")


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    root = tmp_path_factory.mktemp("roles")
    run = build_run(root / "run", SCENARIO, provenance=sweep_provenance(SCENARIO))
    return run, run.prefill_log.read_text(), run.decode_log.read_text()


def _one_line(result, command: str) -> str:
    assert result.rc == 2, result.out + result.err
    lines = [line for line in result.err.strip().splitlines() if not line.startswith("analysing ")]  # progress
    assert len(lines) == 1 and lines[0].startswith(f"pdrepro {command}: error: "), result.err
    assert "Traceback" not in result.out + result.err
    return lines[0]


@pytest.mark.parametrize("command", ["analyze", "check"])
def test_prefill_and_decode_logs_swapped_are_named_as_swapped(made, command):
    run, prefill, decode = made
    run.prefill_log.write_text(decode)
    run.decode_log.write_text(prefill)
    try:
        line = _one_line(pdrepro(command, run.root), command)
    finally:
        run.prefill_log.write_text(prefill)
        run.decode_log.write_text(decode)
    assert "the prefill and decode logs are swapped" in line and str(run.prefill_log) in line, line
    assert "disaggregation_mode='decode'" in line and str(run.decode_log) in line


@pytest.mark.parametrize("role", ["prefill", "decode"])
def test_a_log_of_the_other_role_is_named_either_way(made, role):
    run, prefill, decode = made
    other = decode if role == "prefill" else prefill
    path = run.prefill_log if role == "prefill" else run.decode_log
    path.write_text(other)  # both logs now the other role's: no swap, a wrong log
    try:
        line = _one_line(pdrepro("analyze", run.root), "analyze")
    finally:
        run.prefill_log.write_text(prefill)
        run.decode_log.write_text(decode)
    wrong = "decode" if role == "prefill" else "prefill"
    assert f"{path}: holds a {wrong} server's start" in line and f"not a {role} server's" in line, line
    assert "logs are swapped" not in line


def test_the_logs_in_their_places_are_analysed(made):
    run, _, _ = made
    result = pdrepro("analyze", run.root)
    assert result.rc == 0, result.out + result.err
