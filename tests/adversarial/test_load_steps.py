"""Hostile load steps and load records: `pdrepro load`'s step lists (--concurrency, --request-rate, --length,
--prompts) as any text a person or a script may pass; RUN/load-state.json generated as a valid state with
fields bent (a status or a window out of range, a step the plan does not list, a bool or NaN for a time, keys
added) and as bytes that are no JSON; the steps' bench records bent the same way (completed past the requests,
a list for a count, another step's concurrency, a cut-off line).

The promise: a step list is parsed into distinct steps whose names are plain folder names, or refused in one
line naming the option; a state or a record is read into the load summary (the gates then judge what it
holds) or refused in one line, never a traceback; the analysis and `pdrepro check` write nothing into the run.
What each strategy would have found: a rate such as 1e-9 or 1e9 naming a step folder 'r1e-09' (a path the
state pattern refused on resume); a concurrency written with a non-ASCII digit ('١') that int() takes; a state
whose step ends before it starts, which picked no request and passed as empty; a record whose completed is a
bool (True counted as one request)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import tempfile
from pathlib import Path

from depth import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from pdrepro.analysis.load import compute_load_summary
from pdrepro.core.errors import UserError
from pdrepro.rundir import RunDir, loadstate
from pdrepro.rundir.loadstate import LoadPlan, LoadState, LoadStep, StepRecord
from pdrepro.scenario.model import load_scenario
from pdrepro.sweep.loadrun import result_problem
from pdrepro.sweep.loadsteps import parse_steps
from pdrepro.verdicts.load import evaluate_load

REPO = Path(__file__).resolve().parents[2]
SCENARIO = load_scenario("onebox-qwen25-0.5b")
L, N = 1024, 4

WORDS = st.one_of(
    st.text(max_size=12),
    st.sampled_from(["0", "-1", "1", "2", "4", "8", "1e9", "1e-9", "0.0001", "100000", "100001", "inf", "Infinity",
                     "nan", "NaN", "+4", " 4", "4 ", "١", "٤", "0x10", "1_000", "2.5", "", "1,1", "2,2.0"]),
    st.integers(-10, 2**40).map(str), st.floats(allow_nan=True, allow_infinity=True).map(repr))
LISTS = st.one_of(st.none(), WORDS, st.lists(WORDS, min_size=0, max_size=70).map(",".join))


@settings(max_examples=examples(40, deep_count=1000), deadline=None)
@given(concurrency=LISTS, rate=LISTS)
def test_a_step_list_is_distinct_plain_steps_or_one_line(concurrency, rate):
    try:
        steps = parse_steps(concurrency, rate, default_concurrency=1)
    except UserError as exc:
        text = str(exc)
        assert "\n" not in text and ("--concurrency" in text or "--request-rate" in text or "load step" in text)
        return
    names = [s.name for s in steps]
    assert len(set(names)) == len(names) == len(steps) and 0 < len(steps) <= loadstate.MAX_STEPS
    for step in steps:
        assert loadstate.is_step_name(step.name), step.name
        assert step.concurrency is None or 1 <= step.concurrency <= 100_000
        assert step.request_rate is None or (math.isfinite(step.request_rate) and step.request_rate > 0)
    # A plan of them survives its own file: written and read back the same.
    plan = LoadPlan(scenario_fingerprint="0" * 64, prompt_len=L, num_prompts=N, steps=steps)
    with tempfile.TemporaryDirectory() as tmp:
        loadstate.write(Path(tmp), LoadState(plan=plan))
        again = loadstate.read(Path(tmp))
        assert again is not None and again.plan == plan


HOSTILE = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=True),
                    st.text(max_size=20), st.sampled_from(["done", "failed", "unfinished", "pending", "c1", "c9",
                                                           "../x", ""]),
                    st.lists(st.integers(-2, 5), max_size=3), st.dictionaries(st.text(max_size=4), st.integers(), max_size=2))
STEPS = (LoadStep(concurrency=1), LoadStep(concurrency=2, request_rate=4.0))


def _valid_state() -> dict:
    plan = LoadPlan(scenario_fingerprint=SCENARIO.fingerprint, prompt_len=L, num_prompts=N, steps=STEPS)
    state = LoadState(plan=plan, steps={s.name: StepRecord(status="done", started_at=1000.0, ended_at=2000.0)
                                        for s in STEPS})
    return json.loads(state.model_dump_json())


def _valid_record(step: LoadStep) -> dict:
    return {"dataset_name": "random", "random_input_len": L, "random_output_len": SCENARIO.sweep.output_len,
            "max_concurrency": step.concurrency, "completed": N - 1, "ttfts": [0.05, 0.06, 0.0, 0.07],
            "errors": ["", "", "HTTP 500: Internal Server Error", ""], "output_lens": [32, 32, 0, 32],
            "mean_ttft_ms": 60.0, "median_ttft_ms": 60.0, "p99_ttft_ms": 70.0}


@st.composite
def bent_runs(draw) -> tuple[bytes, list[bytes]]:
    state = _valid_state()
    records = [_valid_record(s) for s in STEPS]
    for _ in range(draw(st.integers(1, 3))):
        where = draw(st.sampled_from(["plan", "step", "top", "record", "bytes"]))
        if where == "plan" and isinstance(state.get("plan"), dict):
            state["plan"][draw(st.sampled_from(["prompt_len", "num_prompts", "steps", "scenario_fingerprint", "x"]))] = \
                draw(HOSTILE)
        elif where == "step" and isinstance(state.get("steps"), dict) and state["steps"]:
            name = draw(st.sampled_from(sorted(state["steps"])))
            if isinstance(state["steps"][name], dict):
                state["steps"][name][draw(st.sampled_from(["status", "started_at", "ended_at", "reason", "x"]))] = \
                    draw(HOSTILE)
        elif where == "top":
            state[draw(st.sampled_from(["schema_version", "plan", "steps", "surprise"]))] = draw(HOSTILE)
        elif where == "record":
            record = records[draw(st.integers(0, 1))]
            record[draw(st.sampled_from(["completed", "ttfts", "errors", "random_input_len", "max_concurrency",
                                         "output_lens", "p99_ttft_ms"]))] = draw(HOSTILE)
    raw = [json.dumps(r).encode() for r in records]
    if draw(st.booleans()):
        raw[draw(st.integers(0, 1))] = draw(st.sampled_from([b"", b"{", b"\xff\xfe", b"[1, 2]", b"{}\n{}", b"NaN"]))
    return json.dumps(state).encode(), raw


def _lay_out(root: Path, state: bytes, records: list[bytes]) -> RunDir:
    run = RunDir(root)
    root.mkdir()
    (root / "scenario.yaml").write_text(SCENARIO.to_yaml())
    (root / loadstate.FILE).write_bytes(state)
    for step, raw in zip(STEPS, records):
        folder = loadstate.step_run(root, step)
        folder.bench_dir.mkdir(parents=True)
        folder.bench_file(L).write_bytes(raw)
    return run


@settings(max_examples=examples(40, deep_count=1000), deadline=None)
@given(bent_runs())
def test_a_bent_state_or_record_is_judged_or_refused_in_one_line(case):
    state, records = case
    with tempfile.TemporaryDirectory() as tmp:
        run = _lay_out(Path(tmp) / "run", state, records)
        before = {p: p.read_bytes() for p in run.root.rglob("*") if p.is_file()}
        try:
            summary = compute_load_summary(run, SCENARIO)
        except UserError as exc:
            assert "\n" not in str(exc)
        else:
            results = evaluate_load(summary)
            assert results  # every step judged, never an empty pass
            for step in summary.steps:
                if step.failed_requests is not None:
                    assert 0 <= step.failed_requests <= step.requests
                    # A step whose record failed a request never passes the no-failure gate.
                    passed = {r.name: r.passed for r in results if r.detail.startswith(f"step {step.name}:")}
                    assert passed.get("failed_requests") is (step.failed_requests <= 0)
        for step in STEPS:
            problem = result_problem(loadstate.step_run(run.root, step).bench_file(L), _plan(), step)
            assert problem is None or "\n" not in problem
        assert {p: p.read_bytes() for p in run.root.rglob("*") if p.is_file()} == before


def _plan() -> LoadPlan:
    return LoadPlan(scenario_fingerprint=SCENARIO.fingerprint, prompt_len=L, num_prompts=N, steps=STEPS)


@settings(max_examples=examples(6), deadline=None)
@given(option=st.sampled_from(["--concurrency", "--request-rate", "--prompt-lens", "--prompts"]),
       value=st.sampled_from(["0", "-3", "1,1", "abc", "١", "1e999", "nan", "", "1" * 30, ",", "2,,4"]))
def test_the_command_refuses_a_bad_step_option_in_one_line_and_writes_nothing(option, value):
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run"
        extra = [] if option == "--concurrency" else ["--concurrency", "1"]
        proc = subprocess.run(
            [sys.executable, "-m", "pdrepro", "load", "--scenario", "onebox-qwen25-0.5b", "--router",
             "http://127.0.0.1:9", "--prefill", "http://127.0.0.1:9", "--decode", "http://127.0.0.1:9", "--model",
             tmp, "--dataset", tmp, "--bench-in-place", "--out", str(out), *extra, f"{option}={value}"],
            capture_output=True, text=True, timeout=60, cwd=REPO)
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 2 and len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
        assert option in lines[0] or "load step" in lines[0]
        assert not out.exists()
