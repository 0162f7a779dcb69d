"""The kinds registry picks a run folder's kind by what the folder records, never by its name: every recorded
run under tests/recorded/ is recognised as the kind it is, a copy of one placed under another kind's name is
still judged as what it records, and `pdrepro check` gives each recorded run the exit status it gave before the
registry (0 pass, 1 a check failed, 2 a folder `check` cannot judge as one run, now naming the kind's own judge)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from clihelp import pdrepro  # noqa: E402
from runkinds import build_smoke_run, copy_recorded, tree_hash  # noqa: E402

from pdrepro.kinds import registry  # noqa: E402
from pdrepro.kinds.base import RunKind  # noqa: E402
from pdrepro.rundir import RunDir  # noqa: E402

RECORDED = Path(__file__).resolve().parents[1] / "recorded"
AB = "h200-ab-mooncake-tcp-vs-nixl-sglang-0.5.15.post1/ab"
CMP = "h200-compare-7b-sglang-0.5.15.post1/cmp"
LOAD = "h200-load-0.5b-mooncake-tcp-sglang-0.5.15.post1/load"
TUNE = "h200-tune-0.5b-mooncake-tcp-sglang-0.5.15.post1/tune"

# Each recorded folder and the kind it records (the composites' members are sweeps' runs of their own).
KINDS = {
    AB: "ab", f"{AB}/mooncake_tcp": "sweep", f"{AB}/nixl": "sweep",
    "h200-ab-mooncake-tcp-vs-nixl-sglang-0.5.15.post1/first-session": "ab",
    CMP: "compare", f"{CMP}/a10-qwen25-7b-onebox-rate1": "compare", f"{CMP}/a10-qwen25-7b-onebox-rate4": "compare",
    f"{CMP}/a10-qwen25-7b-onebox-rate1/1P1D": "sweep", f"{CMP}/a10-qwen25-7b-onebox-rate4/2-regular": "sweep",
    "h200-compare-stacks-7b-sglang-0.5.15.post1": "compare",
    LOAD: "load", f"{LOAD}/steps/c1": "sweep", f"{LOAD}/steps/c8": "sweep",
    TUNE: "tune", f"{TUNE}/baseline-1": "sweep", f"{TUNE}/s3": "sweep",
    "h200-tune-0.5b-mooncake-tcp-sglang-0.5.15.post1/first-session": "tune",
    "h200-onebox-sglang-0.5.15.post1": "sweep", "h200-onebox-host-sglang-0.5.15.post1": "sweep",
    "h200-onebox-nixl-and-mooncake-sglang-0.5.15.post1/nixl": "sweep",
}
# `pdrepro check`'s exit status on each recorded run (the same runs, unedited): as before the kinds registry, but a
# composite's folder is now judged by its kind's own judge (the A/B and the tune pass, as `--judge` says).
CHECK_EXIT = {
    AB: 0, f"{AB}/nixl": 0, CMP: 2, f"{CMP}/a10-qwen25-7b-onebox-rate1": 0, LOAD: 0, f"{LOAD}/steps/c1": 2,
    TUNE: 0, f"{TUNE}/s1": 0, "h200-onebox-sglang-0.5.15.post1": 1,
    "h200-onebox-nixl-and-mooncake-sglang-0.5.15.post1/nixl": 1,
}


def test_every_kind_has_one_module_behind_the_interface_and_one_name():
    names = registry.names()
    assert sorted(names) == ["ab", "compare", "fault", "load", "smoke", "sweep", "tune"]
    assert all(isinstance(k, RunKind) for k in registry.KINDS)
    modules = {type(k).__module__ for k in registry.KINDS}
    assert modules == {f"pdrepro.kinds.{n}" for n in names}
    # Each kind owns its summary's model, and no two kinds share one.
    models = [k.summary_model for k in registry.KINDS]
    assert len(set(models)) == len(models)
    assert {m.__name__ for m in models} == {"Summary", "SmokeSummary", "ComparisonSummary", "AbSummary", "TuneSummary",
                                             "LoadSummary", "FaultSummary"}


@pytest.mark.parametrize("folder, kind", sorted(KINDS.items()))
def test_every_recorded_run_is_recognised_as_its_kind(folder, kind):
    assert registry.kind_of(RunDir(RECORDED / folder)).name == kind


def test_a_built_smoke_run_is_a_smoke(tmp_path):
    assert registry.kind_of(build_smoke_run(tmp_path / "sweep")).name == "smoke"


@pytest.mark.parametrize("source, named", [
    (f"{AB}/mooncake_tcp", "tune"), (f"{AB}/nixl", "smoke"), (LOAD, "ab"), (f"{CMP}/a10-qwen25-7b-onebox-rate1", "load"),
    (TUNE, "compare"), (AB, "nixl"),
])
def test_a_folder_named_like_another_kind_is_what_it_records(tmp_path, source, named):
    copy = copy_recorded(RECORDED / source, tmp_path / named)
    assert registry.kind_of(copy).name == KINDS[source]


def test_an_arm_placed_as_a_load_step_is_still_judged_as_a_sweep(tmp_path):
    # A sweep's run copied where a load's step would sit, and named like one: `check` judges it as the sweep it is.
    copy = copy_recorded(RECORDED / f"{AB}/nixl", tmp_path / "load" / "steps" / "c1")
    before = tree_hash(copy.root)
    result = pdrepro("check", copy.root)
    assert result.rc == 0, result.err[-2000:]
    assert "38 passed" in result.out  # the count on standard output
    assert tree_hash(copy.root) == before  # judging writes nothing


@pytest.mark.parametrize("folder, code", sorted(CHECK_EXIT.items()))
def test_check_gives_each_recorded_run_its_verdict_of_before(tmp_path, folder, code):
    copy = copy_recorded(RECORDED / folder, tmp_path / "run")
    result = pdrepro("check", copy.root)
    assert result.rc == code, (result.rc, result.err[-2000:])
    if code == 2 and registry.kind_of(copy).name != "sweep":
        # A composite's folder is one line naming how it is judged, never a traceback.
        errors = [line for line in result.err.splitlines() if line.startswith("pdrepro check: error:")]
        assert len(errors) == 1 and ("--judge" in errors[0] or "--collect" in errors[0] or "pdrepro check" in errors[0])


def test_a_folder_that_records_nothing_is_judged_as_a_sweep_which_names_what_it_lacks(tmp_path):
    (tmp_path / "empty").mkdir()
    assert registry.kind_of(RunDir(tmp_path / "empty")) is registry.SWEEP
    result = pdrepro("check", tmp_path / "empty", "--scenario", "onebox-qwen25-0.5b")
    assert result.rc == 2 and "has neither bench/ nor logs/" in result.err


def test_a_composite_state_file_decides_over_the_folders_it_holds(tmp_path):
    # An A/B's folder with a sweep's bench/ planted beside its arms is still the A/B its state records.
    copy = copy_recorded(RECORDED / AB, tmp_path / "ab")
    shutil.copytree(RECORDED / f"{AB}/nixl/bench", copy.root / "bench")
    assert registry.kind_of(copy).name == "ab"


@pytest.mark.parametrize("folder, command", [(AB, "ab"), (TUNE, "tune"),
                                             ("h200-ab-mooncake-tcp-vs-nixl-sglang-0.5.15.post1/first-session", "ab")])
def test_check_and_the_kinds_own_judge_give_one_verdict_and_status(tmp_path, folder, command):
    copy = copy_recorded(RECORDED / folder, tmp_path / "run")
    before = tree_hash(copy.root)
    checked, judged = pdrepro("check", copy.root), pdrepro(command, "--judge", copy.root)
    assert checked.rc == judged.rc, (checked.err[-1500:], judged.err[-1500:])
    if checked.rc != 2:
        assert checked.out.rstrip() == judged.out.rstrip()  # the same report, from the same judge
    assert tree_hash(copy.root) == before
