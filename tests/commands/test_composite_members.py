"""Members prove who they are (issue 33, item 2), as a user meets it: the recorded GPU runs of each composite kind
(ab, compare, tune, load), copied into tmp_path and then tampered with the way the issue found them passing (a
copy placed as another member, members swapped, a foreign run placed as a member, a plan file edited, a step's
window widened, a link planted where a member goes). Each kind's own judge (`ab --judge`, `tune --collect`,
`check` of a comparison or a load run) must fail (exit 1) naming the member and both values, never pass, and
write nothing through a planted link. The foreign run is the recorded one-box run of another scenario
(tests/recorded/h200-onebox-sglang-0.5.15.post1), standing where the issue placed a 235B run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from runkinds import tree_hash

from pdrepro.commands import run_command

RECORDED = Path(__file__).resolve().parents[1] / "recorded"
AB = RECORDED / "h200-ab-mooncake-tcp-vs-nixl-sglang-0.5.15.post1" / "ab"
COMPARE = RECORDED / "h200-compare-7b-sglang-0.5.15.post1" / "cmp" / "a10-qwen25-7b-onebox-rate1"
TUNE = RECORDED / "h200-tune-0.5b-mooncake-tcp-sglang-0.5.15.post1" / "tune"
LOAD = RECORDED / "h200-load-0.5b-mooncake-tcp-sglang-0.5.15.post1" / "load"
FOREIGN = RECORDED / "h200-onebox-sglang-0.5.15.post1"


def _copy(source: Path, dest: Path) -> Path:
    shutil.copytree(source, dest)
    for p in dest.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    return dest


def _judged(capsys, *argv: str) -> tuple[int, str]:
    status = run_command(list(argv))
    out = capsys.readouterr()
    return status, out.out + out.err


def _tune_summary(capsys, run: Path) -> dict:
    """The tune's summary as its judge gives it (--json on standard output): judging writes nothing into the run."""
    run_command(["tune", "--judge", str(run), "--json"])
    return json.loads(capsys.readouterr().out)["summary"]


def _swap(a: Path, b: Path) -> None:
    a.rename(a.with_name(a.name + ".swap"))
    b.rename(a)
    a.with_name(a.name + ".swap").rename(b)


# ---- ab -------------------------------------------------------------------------------------------------------


def test_ab_a_copy_of_the_mooncake_arm_placed_as_nixl_fails_naming_both(tmp_path, capsys):
    run = _copy(AB, tmp_path / "ab")
    shutil.rmtree(run / "nixl")
    _copy(AB / "mooncake_tcp", run / "nixl")
    status, text = _judged(capsys, "ab", "--judge", str(run))
    assert status == 1, text
    assert "member nixl: its backend is mooncake_tcp" in text and "the plan says nixl" in text
    assert "identical to mooncake_tcp's" in text
    assert "FAIL" in text


def test_ab_an_arms_state_with_the_backends_swapped_fails_both_arms(tmp_path, capsys):
    run = _copy(AB, tmp_path / "ab")
    state = json.loads((run / "arms-state.json").read_text())
    first, second = state["arms"]
    first["backend"], second["backend"] = second["backend"], first["backend"]
    (run / "arms-state.json").write_text(json.dumps(state))
    status, text = _judged(capsys, "ab", "--judge", str(run))
    assert status == 1, text
    assert "member mooncake_tcp: its backend is mooncake_tcp (its stack.json), but the plan says nixl" in text
    assert "member nixl: its backend is nixl (its stack.json), but the plan says mooncake_tcp" in text


def test_ab_a_foreign_run_placed_as_an_arm_fails_on_its_scenario(tmp_path, capsys):
    run = _copy(AB, tmp_path / "ab")
    shutil.rmtree(run / "nixl")
    _copy(FOREIGN, run / "nixl")
    status, text = _judged(capsys, "ab", "--judge", str(run))
    assert status == 1, text
    assert "member nixl: its scenario is fingerprint" in text and "(its own provenance.json)" in text


def test_ab_a_link_planted_as_an_arm_is_judged_failed_and_never_read_or_written(tmp_path, capsys):
    run = _copy(AB, tmp_path / "ab")
    victim = _copy(AB / "nixl", tmp_path / "victim")
    shutil.rmtree(run / "nixl")
    (run / "nixl").symlink_to(Path("..") / "victim")
    before = tree_hash(victim)
    status, text = _judged(capsys, "ab", "--judge", str(run))
    assert status == 1, text
    assert "member nixl: its folder is" in text and "is a link (to ../victim)" in text
    assert tree_hash(victim) == before


def test_ab_refuses_to_start_an_arm_through_a_planted_link(tmp_path, capsys):
    run, victim = tmp_path / "ab", tmp_path / "victim"
    run.mkdir()
    victim.mkdir()
    (run / "nixl").symlink_to(Path("..") / "victim")
    model, dataset = tmp_path / "model", tmp_path / "sharegpt.json"
    model.mkdir()
    dataset.write_text("[]")
    status, text = _judged(capsys, "ab", "--backends", "mooncake_tcp,nixl", "--out", str(run), "--model", str(model),
                           "--dataset", str(dataset))
    assert status == 2, text
    assert "arm nixl:" in text and "is a link (to ../victim)" in text
    assert list(victim.iterdir()) == [] and sorted(p.name for p in run.iterdir()) == ["nixl"]


# ---- compare --------------------------------------------------------------------------------------------------


def test_compare_the_configurations_swapped_fail_check(tmp_path, capsys):
    run = _copy(COMPARE, tmp_path / "cmp")
    _swap(run / "1P1D", run / "2-regular")
    status, text = _judged(capsys, "check", str(run))
    assert status == 1, text
    assert "member 1P1D: its stack is a regular stack (stack.json), but the plan says a disaggregated stack" in text
    assert "member 2-regular: its stack is a disaggregated stack" in text


def test_compare_the_pd_run_placed_as_the_regular_pair_fails_check(tmp_path, capsys):
    run = _copy(COMPARE, tmp_path / "cmp")
    shutil.rmtree(run / "2-regular")
    _copy(COMPARE / "1P1D", run / "2-regular")
    status, text = _judged(capsys, "check", str(run))
    assert status == 1, text
    assert "member 2-regular: its stack is a disaggregated stack" in text
    assert "member 2-regular: its copy is bench/result-8192.jsonl identical to 1P1D's" in text


# ---- tune -----------------------------------------------------------------------------------------------------


def test_tune_three_copies_of_one_baseline_are_no_spread_and_no_best(tmp_path, capsys):
    run = _copy(TUNE, tmp_path / "tune")
    for n in (2, 3):
        shutil.rmtree(run / f"baseline-{n}")
        _copy(TUNE / "baseline-1", run / f"baseline-{n}")
    status, text = _judged(capsys, "tune", "--collect", str(run))
    assert status == 1, text
    for n in (2, 3):
        assert f"member baseline-{n}: its copy is" in text and "identical to baseline-1's" in text
    assert "spread 0.000" not in text and "# best:" not in text
    summary = _tune_summary(capsys, run)
    assert summary["best"] is None
    assert all(length["baseline"]["spread_GB_s"] is None for length in summary["lengths"])


def test_tune_a_foreign_run_as_a_setting_is_never_named_best(tmp_path, capsys):
    run = _copy(TUNE, tmp_path / "tune")
    shutil.rmtree(run / "s2")
    _copy(FOREIGN, run / "s2")
    status, text = _judged(capsys, "tune", "--collect", str(run))
    assert status == 1, text
    assert "member s2: its scenario is fingerprint" in text
    summary = _tune_summary(capsys, run)
    assert summary["best"] is None or summary["best"]["setting"] != "s2"
    assert all(f["bandwidth_GB_s"] is None for length in summary["lengths"] for f in length["ranking"]
               if f["setting"] == "s2")


def test_tune_a_plan_with_two_settings_values_swapped_fails_both(tmp_path, capsys):
    run = _copy(TUNE, tmp_path / "tune")
    plan = json.loads((run / "tune-plan.json").read_text())
    by_name = {s["name"]: s for s in plan["settings"]}
    by_name["s1"]["values"], by_name["s2"]["values"] = by_name["s2"]["values"], by_name["s1"]["values"]
    (run / "tune-plan.json").write_text(json.dumps(plan))
    status, text = _judged(capsys, "tune", "--collect", str(run))
    assert status == 1, text
    assert "member s1: its scenario is fingerprint" in text and "member s2: its scenario is fingerprint" in text


# ---- load -----------------------------------------------------------------------------------------------------


def test_load_c1_and_c8_bench_records_swapped_fail_check(tmp_path, capsys):
    run = _copy(LOAD, tmp_path / "load")
    _swap(run / "steps" / "c1" / "bench" / "result-4096.jsonl", run / "steps" / "c8" / "bench" / "result-4096.jsonl")
    status, text = _judged(capsys, "check", str(run))
    assert status == 1, text
    assert "member c1: its bench is concurrency 8 (its bench record), but the plan says concurrency 1" in text
    assert "member c8: its bench is concurrency 1 (its bench record), but the plan says concurrency 8" in text


def test_load_a_widened_step_window_claims_no_other_steps_requests(tmp_path, capsys):
    run = _copy(LOAD, tmp_path / "load")
    state = json.loads((run / "load-state.json").read_text())
    state["steps"]["c1"]["ended_at"] = state["steps"]["c8"]["ended_at"]
    (run / "load-state.json").write_text(json.dumps(state))
    status, text = _judged(capsys, "check", str(run))
    assert status == 1, text
    assert "member c1: its window is 132 prefill requests logged inside its window (131 after its warm-up)" in text
    for later in ("c2", "c4", "c8"):
        assert f"member {later}: its window is a window from" in text and "inside step c1's" in text


@pytest.mark.parametrize("source", [AB, TUNE], ids=["ab", "tune"])
def test_a_member_record_of_another_composite_fails(tmp_path, capsys, source):
    run = _copy(source, tmp_path / source.name)
    member = "nixl" if source is AB else "s1"
    (run / member / "member.json").write_text(json.dumps({"kind": "load", "composite": "0" * 32, "member": "c1"}))
    argv = ["ab", "--judge", str(run)] if source is AB else ["tune", "--collect", str(run)]
    status, text = _judged(capsys, *argv)
    assert status == 1, text
    assert f"member {member}: its record is member c1 (its member.json), but the plan says member {member}" in text


def test_ab_render_refuses_to_write_an_arms_job_through_a_planted_link(tmp_path, capsys):
    run, victim = tmp_path / "ab", tmp_path / "victim"
    run.mkdir()
    victim.mkdir()
    (run / "nixl").symlink_to(Path("..") / "victim")
    status, text = _judged(capsys, "ab", "--render", "slurm", "--scenario", "h20-qwen3-235b-1p1d", "--backends",
                           "mooncake,nixl", "--out", str(run))
    assert status == 2, text
    assert "arm nixl:" in text and "is a link (to ../victim)" in text
    assert list(victim.iterdir()) == [] and sorted(p.name for p in run.iterdir()) == ["nixl"]
