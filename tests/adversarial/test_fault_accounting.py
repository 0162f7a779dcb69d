"""The fault run's accounting and its judge, against generated requests and hostile summaries.

The promise: every request is in exactly one class (answered, errored, lost) by how it ended; a fault with a lost
request never passes, whatever counts the summary claims; counts that are not the requests' own fail; a fault
run's summary bent anywhere (a key's value replaced by any JSON, a key dropped or added, bytes that are no JSON)
is read into the model and judged, or refused in one line (UserError), never a traceback."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from depth import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from pdrepro.core.errors import UserError
from pdrepro.kinds.fault import judge
from pdrepro.rundir import faultsummary
from pdrepro.rundir.faultsummary import CLASS_OF, OUTCOMES, Counts, FaultResult, FaultSummary, RequestRecord, account


@st.composite
def requests(draw, min_size: int = 0) -> list[RequestRecord]:
    outcomes = draw(st.lists(st.sampled_from(OUTCOMES), min_size=min_size, max_size=40))
    out = []
    for i, outcome in enumerate(outcomes):
        sent = draw(st.floats(0, 100))
        ended = None if outcome == "not_ended" else sent + draw(st.floats(0, 100))
        status = 200 if outcome == "answered" else draw(st.integers(400, 599)) if outcome == "http_error" else None
        out.append(RequestRecord(index=i, sent_s=sent, ended_s=ended, outcome=outcome, status=status))
    return out


def _summary(reqs: list[RequestRecord], counts: Counts | None = None, **fields) -> FaultSummary:
    result = FaultResult.model_validate({
        "fault": "kill-decode", "target": "decode-0", "signalled": ("decode-0 (pid 7)",), "started_at": "2026-12-03",
        "fault_at_s": 1.0, "in_flight_at_fault": 2, "restarted": True, "recovery_s": 3.0, "recovery_bound_s": 120.0,
        "client_timeout_s": 60.0, "requests": tuple(reqs), "counts": counts or account(reqs), **fields})
    return FaultSummary(stack_run="/tmp/stack", scenario="onebox-qwen25-0.5b", stack_id="0" * 32,
                        router_url="http://127.0.0.1:8000", requests_per_fault=max(1, len(reqs)), concurrency=4,
                        recovery_bound_s=120.0, bound_source="test", faults=(result,), stack_up_after=True)


@settings(max_examples=examples(200))
@given(requests())
def test_every_request_is_in_exactly_one_class(reqs):
    c = account(reqs)
    assert c.answered + c.errored + c.lost == len(reqs)
    for name in ("answered", "errored", "lost"):
        assert getattr(c, name) == sum(CLASS_OF[r.outcome] == name for r in reqs)
    assert c.lost == sum(r.outcome in ("no_answer", "not_ended") for r in reqs)


@settings(max_examples=examples(150))
@given(requests(min_size=1), st.builds(Counts, answered=st.integers(0, 50), errored=st.integers(0, 50),
                                       lost=st.integers(0, 50)), st.booleans())
def test_a_lost_request_never_passes_whatever_the_counts_claim(reqs, claimed, forge):
    summary = _summary(reqs, claimed if forge else None)
    verdict = judge(summary)
    real = account(reqs)
    failed = {d["check"] for d in verdict.data["checks"] if d["verdict"] == "FAIL"}
    if real.lost:
        assert verdict.status == 1 and "lost_without_error" in failed
    if forge and claimed != real:
        assert verdict.status == 1 and "counts_match_requests" in failed
    if not real.lost and (not forge or claimed == real):
        assert verdict.status == 0, verdict.text


def test_a_fault_not_run_or_not_recovered_fails():
    reqs = [RequestRecord(index=0, sent_s=0.0, ended_s=0.1, outcome="answered", status=200)]
    assert judge(_summary(reqs)).status == 0
    for bent in ({"recovery_s": None}, {"recovery_s": 121.0}, {"restarted": False}, {"in_flight_at_fault": 0},
                 {"error": "SIGKILL reached none of its processes"}):
        assert judge(_summary(reqs, **bent)).status == 1, bent
    assert judge(_summary(reqs).model_copy(update={"faults": ()})).status == 1


@settings(max_examples=examples(100))
@given(requests(min_size=1), st.text(min_size=1, max_size=12), st.booleans(), st.booleans())
def test_an_interrupted_run_never_passes_whatever_it_restored(reqs, signame, cut, restored):
    # Every request answered and the fault recovered: only the stop is left to fail the run (unknown never passes).
    answered = [r.model_copy(update={"outcome": "answered", "status": 200, "ended_s": r.sent_s}) for r in reqs]
    summary = _summary(answered)
    assert judge(summary).status == 0
    if cut:  # the fault itself was cut short, and its undo kept beside it
        undo = faultsummary.Undo(action="restarted", ok=restored, line="decode-0 started again")
        fault = summary.faults[0].model_copy(update={"interrupted": signame, "undo": undo})
        summary = summary.model_copy(update={"faults": (fault,)})
    verdict = judge(summary.model_copy(update={"interrupted": signame}))
    failed = {d["check"] for d in verdict.data["checks"] if d["verdict"] == "FAIL"}
    assert verdict.status == 1 and "not_interrupted" in failed
    assert ("restored" in failed) == (cut and not restored)


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
                    max_leaves=6)


def _paths(data, at=()):
    yield at
    if isinstance(data, dict):
        for k, v in data.items():
            yield from _paths(v, (*at, k))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            yield from _paths(v, (*at, i))


@settings(max_examples=examples(150))
@given(requests(min_size=1), st.data(), JSON, st.sampled_from(["replace", "drop", "add"]))
def test_a_bent_summary_is_read_and_judged_or_refused_in_one_line(reqs, data, value, how):
    raw = _summary(reqs).model_dump(mode="json")
    paths = [p for p in _paths(raw) if p]
    where = data.draw(st.sampled_from(paths))
    parent = raw
    for key in where[:-1]:
        parent = parent[key]
    last = where[-1]
    if how == "replace":
        parent[last] = value
    elif how == "drop":
        del parent[last]
    elif isinstance(parent, dict):
        parent[f"{last}_extra"] = value
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, faultsummary.FILE).write_text(json.dumps(raw))
        try:
            got = faultsummary.read(Path(tmp))
        except UserError as exc:
            assert "\n" not in str(exc) and faultsummary.FILE in str(exc)
            return
    verdict = judge(got)
    if any(account(f.requests).lost for f in got.faults):
        assert verdict.status == 1


def test_bytes_that_are_no_json_are_one_line(tmp_path):
    (tmp_path / faultsummary.FILE).write_bytes(b"\xff{not json")
    try:
        faultsummary.read(tmp_path)
    except UserError as exc:
        assert "not readable JSON" in str(exc)
    else:
        raise AssertionError("bytes that are no JSON were read as a fault summary")
