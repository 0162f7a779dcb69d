"""Member identity under hostile placement (issue 33, item 2): the recorded GPU tune and A/B (tests/recorded/
h200-tune-*, h200-ab-*), copied, then one member bent as the issue found them passing: a sibling's copy placed
over it, a link planted where it goes (to a folder outside the run), two members of different scenarios
swapped, a foreign run (the recorded one-box run of another scenario) placed as it, or the plan edited (two
settings' values swapped in tune-plan.json, the arms' backends swapped in arms-state.json).

The promise: the judge never passes the bent member. The member-identity module (analysis.members) names it
with what the plan says and what its own files show; the kind's judge (tune.judge, publish.abjudge) fails it and
ranks none of its figures; nothing is read or written through a planted link; the unbent recorded runs give no
finding at all (tested beside, so a strategy that bends nothing would fail)."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest
from depth import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from runkinds import tree_hash

from pdrepro.publish import abjudge
from pdrepro.rundir import armsstate, tuneplan
from pdrepro.tune import judge as tunejudge

EXAMPLES_SEED = 8  # the seeded count; the deep profile runs ten times it (depth.examples)
RECORDED = Path(__file__).resolve().parents[1] / "recorded"
SOURCES = {"tune": RECORDED / "h200-tune-0.5b-mooncake-tcp-sglang-0.5.15.post1" / "tune",
           "ab": RECORDED / "h200-ab-mooncake-tcp-vs-nixl-sglang-0.5.15.post1" / "ab"}
FOREIGN = RECORDED / "h200-onebox-sglang-0.5.15.post1"
MEMBERS = {"tune": ["baseline-1", "baseline-2", "baseline-3", "s1", "s2", "s3", "s4"], "ab": ["mooncake_tcp", "nixl"]}
SCENARIO_OF = {"baseline-1": "baseline", "baseline-2": "baseline", "baseline-3": "baseline"}


def _copy(source: Path, dest: Path) -> Path:
    shutil.copytree(source, dest, symlinks=True)
    for p in dest.rglob("*"):
        if not p.is_symlink():
            p.chmod(0o755 if p.is_dir() else 0o644)
    return dest


def _findings(kind: str, run: Path):
    if kind == "tune":
        return tunejudge.member_findings(run, tuneplan.read(run), armsstate.read(run))
    return abjudge.member_findings(run, abjudge_inputs(run))


def abjudge_inputs(run: Path) -> list[abjudge.ArmInput]:
    state = armsstate.read(run)
    assert state is not None
    return [abjudge.ArmInput(a.name, a.backend, a.unfinished()) for a in state.arms]


@pytest.mark.parametrize("kind", sorted(SOURCES))
def test_the_recorded_members_prove_who_they_are(kind, tmp_path):
    run = _copy(SOURCES[kind], tmp_path / kind)
    assert _findings(kind, run) == []


def _distinct(kind: str, a: str, b: str) -> bool:
    """Two members that ran different scenarios (the tune's baseline repeats ran one)."""
    return a != b and (kind == "ab" or SCENARIO_OF.get(a, a) != SCENARIO_OF.get(b, b))


BENDS = st.sampled_from(["tune", "ab"]).flatmap(lambda kind: st.tuples(
    st.just(kind), st.sampled_from(["copy", "link", "swap", "foreign", "plan"]),
    st.sampled_from(MEMBERS[kind]), st.sampled_from(MEMBERS[kind]))).filter(
    lambda b: b[1] in ("link", "foreign") or _distinct(b[0], b[2], b[3]))


def _bend(kind: str, how: str, a: str, b: str, run: Path, outside: Path) -> set[str]:
    """Bend the copy; the members the judge must fail."""
    if how == "copy":
        shutil.rmtree(run / b)
        _copy(SOURCES[kind] / a, run / b)
        return {a, b}  # either may be named the copy of the other (the plan's order decides which comes first)
    if how == "link":
        shutil.rmtree(run / a)
        (run / a).symlink_to(outside)
        return {a}
    if how == "swap":
        (run / a).rename(run / "swapping")
        (run / b).rename(run / a)
        (run / "swapping").rename(run / b)
        return {a, b}
    if how == "foreign":
        shutil.rmtree(run / a)
        _copy(FOREIGN, run / a)
        return {a}
    if kind == "ab":
        state = json.loads((run / "arms-state.json").read_text())
        first, second = state["arms"]
        first["backend"], second["backend"] = second["backend"], first["backend"]
        (run / "arms-state.json").write_text(json.dumps(state))
        return {first["name"], second["name"]}
    plan = json.loads((run / "tune-plan.json").read_text())
    settings_ = {s["name"]: s for s in plan["settings"]}
    one, other = (SCENARIO_OF.get(a, a), SCENARIO_OF.get(b, b))
    settings_[one]["values"], settings_[other]["values"] = settings_[other]["values"], settings_[one]["values"]
    (run / "tune-plan.json").write_text(json.dumps(plan))
    return {f for s in (one, other) for f in settings_[s]["runs"]}


@settings(max_examples=examples(EXAMPLES_SEED), suppress_health_check=[HealthCheck.too_slow])
@given(bend=BENDS)
def test_a_bent_member_is_named_and_never_passes(bend):
    kind, how, a, b = bend
    with tempfile.TemporaryDirectory() as tmp:
        run = _copy(SOURCES[kind], Path(tmp) / kind)
        outside = _copy(SOURCES[kind] / MEMBERS[kind][-1], Path(tmp) / "victim")
        victim_before = tree_hash(outside)
        bent = _bend(kind, how, a, b, run, outside)
        found = _findings(kind, run)
        named = {f.member for f in found}
        assert named & bent, (bend, found)
        if how == "copy":
            assert any(f.about == "copy" and {f.member, f.found.split("identical to ")[-1].split("'s")[0]} == bent
                       for f in found), found
        if how == "link":
            assert any(f.member == a and f.about == "folder" and "is a link" in f.found for f in found), found
        if how in ("swap", "plan") and kind == "tune":
            assert bent <= named, (bent, found)
        # The kind's own judge fails every member named, and lends none of their figures to a ranking.
        if kind == "tune":
            summary = tunejudge.judge(run, tuneplan.read(run), armsstate.read(run))
            runs = {r.folder: r for s in summary.settings for r in s.runs}
            assert all(not runs[m].passed for m in named), summary.problems
            pick = tunejudge.pick_best(summary)
            assert pick is None or not ({r.folder for s in summary.settings if s.name == pick.setting
                                         for r in s.runs} & named)
        else:
            summary = abjudge.judge(run, "ab bent", abjudge_inputs(run))
            assert not summary.passed
            assert all(not arm.verdict.passed for arm in summary.arms if arm.name in named)
            assert all(length.arms[[x.name for x in summary.arms].index(m)].ttft_ms_mean is None
                       for length in summary.lengths for m in named)
        assert tree_hash(outside) == victim_before


LOAD = RECORDED / "h200-load-0.5b-mooncake-tcp-sglang-0.5.15.post1" / "load"
STEPS = ["c1", "c2", "c4", "c8"]
LOAD_BENDS = st.tuples(st.sampled_from(["swap", "copy", "link", "widen", "foreign", "plan"]),
                       st.sampled_from(STEPS), st.sampled_from(STEPS)).filter(lambda b: b[1] != b[2])


def _bend_load(how: str, a: str, b: str, run: Path, outside: Path) -> set[str]:
    """Bend one step of the copied load run; the steps the judge must fail."""
    bench = "bench/result-4096.jsonl"
    if how == "swap":
        (run / "steps" / a / bench).rename(run / "swapping")
        (run / "steps" / b / bench).rename(run / "steps" / a / bench)
        (run / "swapping").rename(run / "steps" / b / bench)
        return {a, b}
    if how == "copy":
        shutil.copyfile(run / "steps" / a / bench, run / "steps" / b / bench)
        return {b}  # a copy of another step's record: named a copy, and its concurrency is the other's
    if how == "link":
        shutil.rmtree(run / "steps" / a)
        (run / "steps" / a).symlink_to(outside)
        return {a}
    if how == "foreign":
        shutil.copyfile(FOREIGN / "bench" / "result-1024.jsonl", run / "steps" / a / bench)
        return {a}
    state = json.loads((run / "load-state.json").read_text())
    if how == "widen":
        first, last = sorted((a, b), key=STEPS.index)
        state["steps"][first]["ended_at"] = state["steps"][last]["ended_at"]
        bent = {s for s in STEPS if STEPS.index(first) < STEPS.index(s) <= STEPS.index(last)}
    else:  # the plan edited: another number of requests per step than every client sent
        state["plan"]["num_prompts"] = 16
        bent = set(STEPS)
    (run / "load-state.json").write_text(json.dumps(state))
    return bent


@settings(max_examples=examples(EXAMPLES_SEED), suppress_health_check=[HealthCheck.too_slow])
@given(bend=LOAD_BENDS)
def test_a_bent_load_step_is_named_and_fails_its_gates(bend):
    from pdrepro.analysis.load import compute_load_summary
    from pdrepro.rundir import RunDir
    from pdrepro.scenario.model import load_scenario
    from pdrepro.verdicts.load import evaluate_load

    how, a, b = bend
    with tempfile.TemporaryDirectory() as tmp:
        run = _copy(LOAD, Path(tmp) / "load")
        outside = _copy(LOAD / "steps" / b, Path(tmp) / "victim")
        victim_before = tree_hash(outside)
        bent = _bend_load(how, a, b, run, outside)
        summary = compute_load_summary(RunDir(run), load_scenario(run / "scenario.yaml"))
        named = {f.member for f in summary.members}
        assert bent <= named, (bend, summary.members)
        failed = {r.detail.split(":")[0].removeprefix("member ") for r in evaluate_load(summary)
                  if r.name == "member_identity" and not r.passed}
        assert bent <= failed
        assert tree_hash(outside) == victim_before


def test_the_recorded_load_steps_prove_who_they_are(tmp_path):
    from pdrepro.analysis.load import compute_load_summary
    from pdrepro.rundir import RunDir
    from pdrepro.scenario.model import load_scenario

    run = _copy(LOAD, tmp_path / "load")
    assert compute_load_summary(RunDir(run), load_scenario(run / "scenario.yaml")).members == []
