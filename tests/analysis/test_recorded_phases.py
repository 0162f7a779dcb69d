"""The phase medians of a real run (tests/recorded/h200-tune-0.5b-mooncake-tcp-sglang-0.5.15.post1/tune/baseline-1,
see the tune's SOURCE), against medians worked out here from the log text alone: its own regex, its own grouping."""

from __future__ import annotations

import re
import statistics
from pathlib import Path

import pytest

from pdrepro.analysis.summarize import compute_summary
from pdrepro.rundir import RunDir
from pdrepro.scenario.model import load_scenario

RUN = (Path(__file__).resolve().parents[1] / "recorded" / "h200-tune-0.5b-mooncake-tcp-sglang-0.5.15.post1" / "tune"
       / "baseline-1")
LINE = re.compile(r"ReqTimeStats\(rid=(?P<rid>\w+), bootstrap_room=(?P<room>\d+), input_len=(?P<n>\d+),.*"
                  r"type=(?P<role>\w+)\): (?P<body>.*)")
DURATION = re.compile(r"(\w+)_duration=([\d.]+)ms")


def _requests(role: str) -> list[dict]:
    """The client's requests in one role's log, in file order: no health check, no room-0 server warm-up."""
    out = []
    for text in (RUN / "logs" / f"{role}.log").read_text().splitlines():
        m = LINE.search(text)
        if m and not m["rid"].startswith("HEALTH_CHECK") and m["room"] != "0":
            out.append({"rid": m["rid"], "room": m["room"], "n": int(m["n"]),
                        "ms": {k: float(v) for k, v in DURATION.findall(m["body"])}})
    return out


def _expected(length: int, warmup: int) -> dict[str, float]:
    measured = [r for r in _requests("prefill") if r["n"] == length][warmup:]
    rooms = {r["room"] for r in measured}
    decode = [r for r in _requests("decode") if r["room"] in rooms]
    out = {}
    for role, reqs in (("prefill", measured), ("decode", decode)):
        for phase in reqs[0]["ms"]:
            out[f"{role}.{phase}"] = statistics.median(r["ms"][phase] for r in reqs)
    return out


@pytest.fixture(scope="module")
def rows():
    summary = compute_summary(RunDir(RUN), load_scenario(RUN / "scenario.yaml"))
    return {r["prompt_len"]: r for r in summary["rows"]}


def test_the_logs_share_rooms_not_rids_between_the_roles():
    # Why the decode lines are matched by bootstrap room: SGLang gives each server's copy its own rid.
    prefill, decode = _requests("prefill"), _requests("decode")
    assert not {r["rid"] for r in prefill} & {r["rid"] for r in decode}
    assert {r["room"] for r in prefill} == {r["room"] for r in decode} and len(prefill) == 22


@pytest.mark.parametrize("length", [4096, 16384])
def test_phase_medians_of_the_recorded_run(rows, length):
    scenario = load_scenario(RUN / "scenario.yaml")
    expected = _expected(length, scenario.sweep.warmup_requests)
    row = rows[length]
    assert set(expected) == {"prefill.bootstrap", "prefill.queue", "prefill.forward", "decode.bootstrap",
                             "decode.alloc_wait", "decode.transfer", "decode.queue", "decode.forward"}
    assert row["phase_ms_median"] == pytest.approx(expected)
    # The client's ten requests of the length, the client's own warm-up left out, on both sides.
    assert set(row["phase_samples"].values()) == {scenario.sweep.num_prompts} == {row["transfer_samples"]}
