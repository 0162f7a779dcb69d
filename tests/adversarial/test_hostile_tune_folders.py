"""Hostile tune folders for `pdrepro tune --collect` (pdrepro.tune.collect): a tune rendered for a cluster, its
run folders written as jobs leave them (tests/runbuilder.py), then bent: a run folder gone, its provenance or
logs gone, its bench file cut; RUN/arms-state.json with any status and exit for any run, or another tune's
label; RUN/engine-ceiling as gpu-check writes it, of other bytes, faster than anything, no JSON, or a link to
/dev/zero; repeats of it (RUN/engine-ceiling-<n>) with gaps in their numbers, numbers no repeat takes
(engine-ceiling-1, -02), or each one a copy or a link of the first, a link to a good run elsewhere or to nothing,
a file, an empty folder, other bytes, another transport, a 17 MiB result.json, /dev/zero or no JSON.

The promise: collect returns a tune summary or refuses in one line (a UserError without a line break), never
a traceback; it writes its three files beside the runs and nothing into one; a run the state calls
interrupted (not run, stopped, still running, or a signal's exit) is never judged from its half-folder; and no
best is named while any run measured nothing. What each strategy would have found: s2 of the first GPU tune,
stopped by SIGTERM, was reported as "has no scenario.yaml; pass --scenario" with "Best: none ... the scenario's
own setting stands" and an overlay saying there was nothing to change, on two runs of seven. Of the engine's
repeats: a repeat that is there is either counted and named in the summary or refused on one line, never left
out without a word, and the figures held against the engine follow its stated rule.

The repeats' rule for gaps: every RUN/engine-ceiling-<n> there is read, whatever numbers are missing between them
(rundir.enginerepeats)."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import statistics
import tempfile
from pathlib import Path

import pytest
from depth import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from runbuilder import Row, build_run
from runkinds import tree_hash
from stackhelp import render_tune

from pdrepro.core.errors import UserError
from pdrepro.rundir import armsstate, tuneplan
from pdrepro.rundir.armsstate import ArmRecord, ArmsState
from pdrepro.rundir.tunesummary import ENGINE_SHARE
from pdrepro.scenario.model import load_scenario
from pdrepro.tune.collect import OVERLAY, REPORT, SUMMARY, collect

REPO = Path(__file__).resolve().parents[2]
POOL = "SGLANG_DISAGGREGATION_THREAD_POOL_SIZE"
SPEED = {"baseline-1": 1.0, "baseline-2": 1.05, "baseline-3": 0.95, "s1": 1.3}


@pytest.fixture(scope="module")
def tune(tmp_path_factory) -> Path:
    _, run, plan = render_tune(tmp_path_factory.mktemp("hostile-tune"), f"{POOL}=4", one_at_a_time=False)
    for setting in plan.settings:
        scenario = load_scenario(run / "scenarios" / f"{setting.name}.yaml")
        for folder in setting.runs:
            build_run(run / folder, scenario, rows=[Row(L, 20.0 + L / 50, (4.0 + L / 200) / SPEED[folder])
                                                    for L in scenario.sweep.prompt_lens])
    return run


RUN_BENDS = st.sampled_from(["intact", "intact", "gone", "no-provenance", "no-logs", "cut-bench"])
STATUSES = st.sampled_from(["pending", "running", "done", "failed", "stopped", "rendered"])
EXITS = st.sampled_from([None, 0, 1, 2, 129, 130, 143])
CEILINGS = st.sampled_from([None, "match", "other-bytes", "too-fast", "no-json", "dev-zero"])
REPEAT_NAMES = ["engine-ceiling-2", "engine-ceiling-3", "engine-ceiling-9", "engine-ceiling-1", "engine-ceiling-02"]
REPEAT_BENDS = st.sampled_from(["match", "match", "match", "copy-of-first", "link-to-first", "link-to-good",
                                "dangling-link", "file", "empty", "other-bytes", "other-transport", "huge",
                                "dev-zero", "no-json"])
REPEATS = st.dictionaries(st.sampled_from(REPEAT_NAMES), REPEAT_BENDS, max_size=3)


def _bend_run(folder: Path, how: str) -> None:
    if how == "gone":
        shutil.rmtree(folder)
    elif how == "no-provenance":
        (folder / "provenance.json").unlink()
    elif how == "no-logs":
        shutil.rmtree(folder / "logs")
    elif how == "cut-bench":
        first = sorted((folder / "bench").iterdir())[0]
        first.write_bytes(first.read_bytes()[:57])


def _ceiling(run: Path, how: str, where: Path | None = None, speed: float = 1.0, transport: str = "rdma") -> None:
    where = where or run / "engine-ceiling"
    where.mkdir()
    if how == "no-json":
        (where / "result.json").write_bytes(b"\x00{not json")
        return
    if how == "dev-zero":
        (where / "result.json").symlink_to("/dev/zero")
        return
    scenario = load_scenario(run / "scenarios" / "baseline.yaml")
    rows = []
    for L in scenario.sweep.prompt_lens:
        nbytes = scenario.kv_bytes(L) + (4096 if how == "other-bytes" else 0)
        seconds = [(1e-6 if how == "too-fast" else 0.8 * (4.0 + L / 200) / 1e3 / speed)] * 3
        rows.append({"prompt_len": L, "nbytes": nbytes, "verified": 3, "failures": [], "layout": "layers",
                     "median_GB_s": nbytes / seconds[0] / 1e9, "seconds": seconds})
    (where / "result.json").write_text(json.dumps({"transport": transport, "block_bytes": 1 << 22, "rows": rows}))


def _repeat(run: Path, name: str, how: str, speed: float) -> None:
    """RUN/<name> bent as ``how`` says; ``speed`` sets a good run's rates apart from every other's."""
    where = run / name
    if how in ("match", "other-bytes", "no-json", "dev-zero"):
        _ceiling(run, how, where, speed)
    elif how == "other-transport":
        _ceiling(run, "match", where, speed, transport="tcp")
    elif how == "copy-of-first" and (run / "engine-ceiling").is_dir():
        shutil.copytree(run / "engine-ceiling", where, symlinks=True)
    elif how == "link-to-first":
        where.symlink_to("engine-ceiling")
    elif how == "link-to-good":
        _ceiling(run, "match", run.parent / f"elsewhere-{name}", speed)
        where.symlink_to(run.parent / f"elsewhere-{name}")
    elif how == "dangling-link":
        where.symlink_to(run.parent / "nowhere")
    elif how == "file":
        where.write_text('{"transport": "rdma"}')
    elif how == "empty":
        where.mkdir()
    elif how == "huge":
        where.mkdir()
        with (where / "result.json").open("wb") as f:
            f.truncate(17 << 20)  # sparse: above the cap of any JSON record, without writing its bytes
    else:  # a copy of a first run that is not there: nothing to copy
        where.mkdir()


def _valid_repeat(name: str) -> bool:
    n = name.removeprefix("engine-ceiling-")
    return n == str(int(n)) and int(n) >= 2


@settings(max_examples=examples(20, deep_count=300), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(bends=st.fixed_dictionaries({f: RUN_BENDS for f in SPEED}),
       state=st.one_of(st.none(), st.fixed_dictionaries({f: st.tuples(STATUSES, EXITS) for f in SPEED})),
       other_label=st.booleans(), ceiling=CEILINGS, repeats=REPEATS)
def test_collect_judges_or_refuses_in_one_line_and_never_writes_into_a_run(tune, bends, state, other_label, ceiling,
                                                                           repeats):
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "tune"
        shutil.copytree(tune, run, symlinks=True)
        plan = tuneplan.read(run)
        assert plan is not None
        for folder, how in bends.items():
            _bend_run(run / folder, how)
        if state is not None:
            label = "tune another" if other_label else plan.label
            armsstate.write(run, ArmsState(label=label, arms=tuple(
                ArmRecord(name=f, status=s, exit=e, reason=f"{s} here" if s in ("failed", "stopped") else None)
                for f, (s, e) in state.items())))
        if ceiling is not None:
            _ceiling(run, ceiling)
        for i, (name, how) in enumerate(sorted(repeats.items())):
            _repeat(run, name, how, speed=1.1 + 0.05 * i)
        before = {f: tree_hash(run / f) for f in SPEED if (run / f).exists()}
        said = io.StringIO()
        try:
            with contextlib.redirect_stdout(said), contextlib.redirect_stderr(said):
                summary = collect(run, plan)
        except UserError as exc:
            assert "\n" not in str(exc).strip() and str(exc).strip(), str(exc)
            assert not any((run / name).exists() for name in (SUMMARY, REPORT, OVERLAY))
            if ceiling in (None, "match") and repeats:
                assert "engine-ceiling-" in str(exc), str(exc)  # only a repeat can be refused: it is named
            summary = None
        assert "Traceback" not in said.getvalue()
        assert {f: tree_hash(run / f) for f in before} == before
        if summary is None:
            return
        assert all((run / name).is_file() for name in (SUMMARY, REPORT, OVERLAY))
        if state is not None and not other_label:
            for folder, (status, code) in state.items():
                if ArmRecord(name=folder, status=status, exit=code).interrupted():
                    assert folder in summary.unmeasured, (folder, status, code)
        for folder, how in bends.items():
            if how == "gone":
                assert folder in summary.unmeasured
        if summary.unmeasured:
            assert summary.best is None
            assert "Best: not judged yet." in (run / REPORT).read_text()
        # Every repeat there was counted and is named: none is left out without a word.
        for name in repeats:
            assert _valid_repeat(name) and f"{name}/result.json" in (summary.engine_ceiling or ""), name
        for length in summary.lengths:
            engine = length.engine_alone
            if engine is None:
                assert all(f.engine_standing is None for f in length.ranking)
                continue
            rates = [r.GB_s for r in engine.runs]
            assert engine.mean_GB_s == statistics.fmean(rates)
            assert engine.spread_GB_s == (max(rates) - min(rates) if len(rates) > 1 else None)
            for f in length.ranking:
                b = f.bandwidth_GB_s
                want = ("not judged" if b is None or len(rates) == 1 else "at or above 0.9"
                        if b >= ENGINE_SHARE * max(rates) else "below 0.9" if b < ENGINE_SHARE * min(rates)
                        else "within the engine's spread")
                assert f.engine_standing == want
