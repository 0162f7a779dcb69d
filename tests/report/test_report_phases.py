"""The report's "Where a request's time goes" table (report/phases.py), on a real run's analysis
(tests/recorded/h200-tune-0.5b-mooncake-tcp-sglang-0.5.15.post1/tune/baseline-1)."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest

from pdrepro.analysis.summarize import compute_summary
from pdrepro.report.markdown import render_report
from pdrepro.rundir import RunDir
from pdrepro.scenario.model import load_scenario

RUN = (Path(__file__).resolve().parents[1] / "recorded" / "h200-tune-0.5b-mooncake-tcp-sglang-0.5.15.post1" / "tune"
       / "baseline-1")
TITLE = "## Where a request's time goes"


@pytest.fixture(scope="module")
def summary() -> dict:
    return compute_summary(RunDir(RUN), load_scenario(RUN / "scenario.yaml"))


def _section(report: str) -> list[str]:
    lines = report.splitlines()
    start = lines.index(TITLE)
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("## "))
    return lines[start:end]


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def test_the_table_shows_each_phase_median_per_length_in_milliseconds(summary):
    section = _section(render_report(summary))
    text = " ".join(section)
    assert "in milliseconds" in text and "alloc wait" in text and "spans that forward" in text
    table = [line for line in section if line.startswith("|")]
    headers = _cells(table[0])
    assert headers == ["Prompt Length", "KV transfer (ms)", "Prefill bootstrap (ms)", "Prefill queue (ms)",
                       "Prefill forward (ms)", "Decode bootstrap (ms)", "Decode alloc wait (ms)",
                       "Decode transfer (ms)", "Decode queue (ms)", "Decode forward (ms)"]
    body = {int(_cells(line)[0]): _cells(line) for line in table[2:]}
    assert sorted(body) == [r["prompt_len"] for r in summary["rows"]]
    for row in summary["rows"]:
        cells = dict(zip(headers, body[row["prompt_len"]]))
        assert cells["KV transfer (ms)"] == f"{row['transfer_ms_median']:.2f}"
        assert cells["Decode transfer (ms)"] == f"{row['phase_ms_median']['decode.transfer']:.2f}"
        assert cells["Prefill forward (ms)"] == f"{row['phase_ms_median']['prefill.forward']:.2f}"


def test_a_phase_one_length_lacks_shows_a_dash_and_another_builds_phase_follows_its_role(summary):
    edited = copy.deepcopy(summary)
    first, second = edited["rows"]
    del first["phase_ms_median"]["decode.queue"]
    second["phase_ms_median"]["prefill.launch"] = 1.5
    table = [line for line in _section(render_report(edited)) if line.startswith("|")]
    headers = _cells(table[0])
    assert headers.index("Prefill launch (ms)") == headers.index("Prefill forward (ms)") + 1
    rows = {int(_cells(line)[0]): dict(zip(headers, _cells(line))) for line in table[2:]}
    assert rows[first["prompt_len"]]["Decode queue (ms)"] == "—"
    assert rows[first["prompt_len"]]["Prefill launch (ms)"] == "—"
    assert rows[second["prompt_len"]]["Prefill launch (ms)"] == "1.50"


def test_a_summary_without_phases_renders_as_before(summary):
    bare = copy.deepcopy(summary)
    for row in bare["rows"]:
        row.pop("phase_ms_median")
        row.pop("phase_samples")
    with_phases, without = render_report(summary), render_report(bare)
    assert TITLE not in without
    # The same report less the section: nothing else moved.
    section = "\n".join(_section(with_phases)) + "\n"
    assert re.sub(re.escape(section), "", with_phases, count=1) == without
