"""A run's outputs where something else stands: a directory named summary.json (or report.md) gets the
fix that applies, moving it away, not chmod advice; the directory and what it holds are left alone."""

import pytest
from clihelp import assert_one_line_error, pdrepro
from runbuilder import build_run, sweep_provenance

from pdrepro.scenario.model import load_scenario

SCENARIO = load_scenario("h20-qwen3-235b-1p1d")


@pytest.mark.parametrize("name", ["summary.json", "report.md"])
def test_a_directory_where_an_output_goes_is_named_with_the_fix(tmp_path, name):
    run = build_run(tmp_path / "run", SCENARIO)
    (run.root / name).mkdir()
    (run.root / name / "keep").write_text("x")
    line = assert_one_line_error(pdrepro("analyze", run.root), "analyze", str(run.root / name), "directory", "move")
    assert "chmod" not in line and "writable" not in line
    assert (run.root / name / "keep").read_text() == "x"


def test_check_writes_no_output_and_names_a_directory_where_the_summary_goes(tmp_path):
    # check judges in memory: an output's place taken by a directory is named, the directory left as it is.
    run = build_run(tmp_path / "run", SCENARIO, provenance=sweep_provenance(SCENARIO))
    (run.summary_file).mkdir()
    (run.summary_file / "keep").write_text("x")
    result = pdrepro("check", run.root)
    assert result.rc == 0, result.out + result.err
    notes = [l for l in result.out.splitlines() if l.startswith("NOTE ")]
    assert len(notes) == 1 and str(run.summary_file) in notes[0] and "is a directory" in notes[0]
    assert (run.summary_file / "keep").read_text() == "x" and not run.report_file.exists()
