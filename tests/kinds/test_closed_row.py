"""The shared per-length row is closed and holds what every kind writes; each kind's summary model is picked by
what the summary records (summarymodel.model_for), and every recorded summary.json reads as its model with its
keys exactly as they are."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from runkinds import build_smoke_run  # noqa: E402

from pdrepro.core.errors import UserError  # noqa: E402
from pdrepro.rundir import RunDir  # noqa: E402
from pdrepro.rundir.summarymodel import (  # noqa: E402
    ComparisonSummary,
    Row,
    SmokeRow,
    SmokeSummary,
    Summary,
    as_summary,
    model_for,
)

RECORDED = Path(__file__).resolve().parents[1] / "recorded"
# The first one-box run's summary.json was written by an earlier release (its "transport" a record): this release
# reads it as no summary, names it stale and judges the run's inputs instead (tests/verdicts), so it is left out.
OLDER = RECORDED / "h200-onebox-sglang-0.5.15.post1" / "summary.json"
SUMMARIES = sorted(p for p in RECORDED.rglob("summary.json") if p != OLDER)


def test_the_shared_row_refuses_an_undeclared_key():
    with pytest.raises(ValueError, match="socket_ms_median"):
        Row.model_validate({"prompt_len": 128, "socket_ms_median": 1.0})
    with pytest.raises(ValueError, match="made_up"):
        Row.model_validate({"prompt_len": 128, "made_up": 1})
    assert SmokeRow.model_validate({"prompt_len": 128, "socket_ms_median": 1.0}).socket_ms_median == 1.0
    with pytest.raises(ValueError, match="made_up"):
        SmokeRow.model_validate({"prompt_len": 128, "made_up": 1})


def test_the_shared_row_holds_no_field_of_the_smoke_alone():
    smoke_only = set(SmokeRow.model_fields) - set(Row.model_fields)
    assert {"socket_ms_median", "mooncake_vs_socket", "nixl_ms_median", "verified", "checked_transfers"} <= smoke_only
    assert not {f for f in Row.model_fields if f.startswith(("socket_", "nixl_", "mooncake_"))}


@pytest.mark.parametrize("data, model", [
    ({"source": "sglang"}, Summary), ({"source": "smoke"}, SmokeSummary),
    ({"source": "sglang", "kind": "comparison"}, ComparisonSummary), ({"source": ["smoke"]}, Summary),
    ({"kind": {"a": 1}, "source": "smoke"}, SmokeSummary), ({}, Summary),
])
def test_the_model_is_the_one_the_summary_records(data, model):
    assert model_for(data) is model


@pytest.mark.parametrize("path", SUMMARIES, ids=lambda p: str(p.relative_to(RECORDED)))
def test_every_recorded_summary_reads_as_its_model_with_its_keys_as_they_are(path):
    data = json.loads(path.read_text())
    summary = as_summary(data)
    assert type(summary) is model_for(data)
    assert summary.to_json().keys() == data.keys()
    for row, written in zip(summary.to_json()["rows"], data["rows"]):
        assert row.keys() == written.keys()


def test_a_recorded_sweeps_summary_with_an_undeclared_row_key_is_one_line(tmp_path):
    arm = RECORDED / "h200-ab-mooncake-tcp-vs-nixl-sglang-0.5.15.post1" / "ab" / "nixl"
    data = json.loads((arm / "summary.json").read_text())
    data["rows"][0]["socket_ms_median"] = 1.0  # a smoke's figure in a sweep's row
    run = RunDir(tmp_path)
    with pytest.raises(UserError, match=r"unknown key rows\[0\]\.socket_ms_median"):
        run.read_summary(data)


def test_a_smokes_summary_reads_as_the_smokes_model(tmp_path):
    run = build_smoke_run(tmp_path / "s")
    summary = run.read_summary()
    assert isinstance(summary, SmokeSummary) and not summary.measures_ttft and not summary.has_fabric
    assert all(isinstance(r, SmokeRow) for r in summary.rows)
