"""The analysis holds what it judges, not what a log holds: a prefill log with many more request-stats lines of
each length than the bench completed (all inside the sweep's windows) is analysed with exit 0, its extra lines
named in a warning, and the rows are those of the same run without them. The bound is shrunk here so that a
small log crosses it (`make bench-analysis-memory` measures the memory on a 500 MB one)."""

from __future__ import annotations

import re

import pytest
from clihelp import pdrepro
from runbuilder import Row, build_run, sweep_provenance

from pdrepro.analysis import serverlogs
from pdrepro.analysis.summarize import compute_summary
from pdrepro.parsers.reqstats import parse_line
from pdrepro.rundir import RunDir
from pdrepro.scenario.model import load_scenario

SCENARIO = load_scenario("onebox-qwen25-0.5b")
ROWS = [Row(L, 20.0 + L / 100, 1.0 + L / 2000) for L in SCENARIO.sweep.prompt_lens]
EXTRA = 120  # per length: more than the shrunk bound holds
_RID = re.compile(r"rid=([^,]+), bootstrap_room=(\d+)")


def _with_extra_lines(run: RunDir) -> None:
    """Before each length's own request lines, EXTRA copies of its first one with fresh ids and its own time
    (so inside the length's window): older lines of the length, as a client that sent more would leave."""
    out, seen, n = [], set(), 0
    for line in run.prefill_log.read_text().splitlines():
        stat = parse_line(line)
        if stat is not None and not stat.is_health_check and stat.input_len not in seen:
            seen.add(stat.input_len)
            for _ in range(EXTRA):
                n += 1
                out.append(_RID.sub(f"rid=extra{n:06d}, bootstrap_room={8_000_000_000_000_000_000 + n}", line))
        out.append(line)
    run.prefill_log.write_text("\n".join(out) + "\n")


def _rows_without(summary, *keys) -> list[dict]:
    return [{k: v for k, v in row.items() if k not in keys} for row in summary["rows"]]


@pytest.fixture
def small_bound(monkeypatch):
    # 4 x (1 warm-up + 10 prompts) + 0: 44 lines of a length held, the older ones counted.
    monkeypatch.setattr(serverlogs, "HELD_SLACK", 0)


def test_extra_lines_are_warned_about_and_leave_the_rows_as_they_were(tmp_path, small_bound):
    clean = compute_summary(build_run(tmp_path / "clean", SCENARIO, rows=ROWS, provenance=sweep_provenance(SCENARIO)), SCENARIO)
    run = build_run(tmp_path / "run", SCENARIO, rows=ROWS, provenance=sweep_provenance(SCENARIO))
    _with_extra_lines(run)
    summary = compute_summary(run, SCENARIO)
    assert _rows_without(summary, "logged_requests") == _rows_without(clean, "logged_requests")
    prompts = SCENARIO.sweep.num_prompts
    for row, was in zip(summary["rows"], clean["rows"]):
        assert was["logged_requests"] == prompts and row["logged_requests"] == prompts + EXTRA
    extra = [i["message"] for i in summary["issues"] if i["kind"] == "extra_requests"]
    assert len(extra) == len(SCENARIO.sweep.prompt_lens), summary["issues"]
    for message in extra:
        assert f"{prompts + EXTRA} requests of length" in message and f"used the last {prompts}" in message
        assert f"the other {EXTRA} request-stats lines left out" in message
        # The bound held: of the EXTRA + 1 + prompts lines, 44 were held, the rest only counted.
        assert f"({EXTRA + 1 + prompts - 44} of the older lines counted, not held)" in message, message
    assert not [i for i in clean["issues"] if i["kind"] == "extra_requests"]


def test_analyze_exits_0_on_such_a_log(tmp_path, small_bound):
    run = build_run(tmp_path / "run", SCENARIO, rows=ROWS, provenance=sweep_provenance(SCENARIO))
    _with_extra_lines(run)
    result = pdrepro("analyze", run.root)
    assert result.rc == 0, result.out + result.err
    assert (run.root / "summary.json").is_file()


def test_a_log_under_the_bound_is_held_whole(tmp_path):
    # The usual bound: the same extra lines are all held (nothing counted only), and named just the same.
    run = build_run(tmp_path / "run", SCENARIO, rows=ROWS, provenance=sweep_provenance(SCENARIO))
    _with_extra_lines(run)
    summary = compute_summary(run, SCENARIO)
    extra = [i["message"] for i in summary["issues"] if i["kind"] == "extra_requests"]
    assert len(extra) == len(SCENARIO.sweep.prompt_lens) and not [m for m in extra if "not held" in m], extra
