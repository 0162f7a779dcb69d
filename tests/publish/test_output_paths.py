"""A run's outputs where something else stands: a directory named summary.json (or report.md) gets the
fix that applies, moving it away, not chmod advice; the directory and what it holds are left alone."""

import pytest
from clihelp import assert_one_line_error, pdrepro
from runbuilder import build_run

from pdrepro.scenario.model import load_scenario

SCENARIO = load_scenario("h20-qwen3-235b-1p1d")


@pytest.mark.parametrize("command", ["analyze", "check"])
@pytest.mark.parametrize("name", ["summary.json", "report.md"])
def test_a_directory_where_an_output_goes_is_named_with_the_fix(tmp_path, command, name):
    run = build_run(tmp_path / "run", SCENARIO)
    (run.root / name).mkdir()
    (run.root / name / "keep").write_text("x")
    line = assert_one_line_error(pdrepro(command, run.root), command, str(run.root / name), "directory", "move")
    assert "chmod" not in line and "writable" not in line
    assert (run.root / name / "keep").read_text() == "x"
