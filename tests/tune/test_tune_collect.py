"""`pdrepro tune --collect` on the folders a cluster's job array leaves: the grid rendered with `--render slurm`,
each run folder then written as a job would leave it (tests/runbuilder.py, in the formats SGLang writes, with the
engine's start-up lines), its transfer times chosen so that the rule's edges are crossed on purpose: a tie in
bandwidth that TTFT breaks, a setting just inside the baseline's spread, one better at three lengths but worse at
the fourth. The rule is held as the report states it, and the judging writes nothing into the tune's folder: its summary
(--json), report and overlay go where the test tells it (judgeout)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from ceilingfile import write_engine_ceiling
from fakecluster import mooncake_startup
from judgeout import judge_tune, judged
from runbuilder import Row, build_run
from runkinds import tree_hash
from stackhelp import env, render_tune

from pdrepro.rundir.summarymodel import Summary
from pdrepro.rundir.tunesummary import RULE, TuneSummary
from pdrepro.scenario.model import load_scenario

REPO = Path(__file__).resolve().parents[2]
POOL = "SGLANG_DISAGGREGATION_THREAD_POOL_SIZE"
# Bandwidth of each run against the first baseline run's (transfer time divides by it), per length; TTFT factor.
BASELINE = {"baseline-1": 1.0, "baseline-2": 1.04, "baseline-3": 0.96}     # mean 1.0, spread 0.08
PLANNED = {"2": ({}, 1.20, 1.0),                  # better everywhere
           "4": ({}, 1.20, 0.9),                  # as fast as "2", lower TTFT: ranks above it, and is the best
           "8": ({}, 1.04, 1.0),                  # above the mean, inside its spread: within the noise
           "16": ({128: 0.8}, 1.5, 1.0)}          # far better at three lengths, worse at 128: never the best


def _pdrepro(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pdrepro", *args], env=env(), cwd=REPO, capture_output=True,
                          text=True, timeout=120)


def _write_run(folder: Path, scenario_file: Path, speed: dict[int, float], ttft: float) -> None:
    scenario = load_scenario(scenario_file)
    rows = [Row(L, (20.0 + L / 50) * ttft, (4.0 + L / 200) / speed[L]) for L in scenario.sweep.prompt_lens]
    build_run(folder, scenario, rows=rows)
    for role in ("prefill", "decode"):  # the engine's start-up lines, after the server's own first line
        log = folder / "logs" / f"{role}.log"
        lines = log.read_text().splitlines(keepends=True)
        lines[1:1] = [line + "\n" for line in mooncake_startup("rdma", nics=1)]
        log.write_text("".join(lines))


@pytest.fixture(scope="module")
def collected(tmp_path_factory):
    site, run, plan = render_tune(tmp_path_factory.mktemp("collect"), f"{POOL}={','.join(PLANNED)}")
    lens = load_scenario(site["options"][1]).sweep.prompt_lens
    name = {}
    for setting in plan.settings:
        scenario_file = run / "scenarios" / f"{setting.name}.yaml"
        if not setting.values:
            for folder in setting.runs:
                _write_run(run / folder, scenario_file, dict.fromkeys(lens, BASELINE[folder]), 1.0)
            continue
        value = setting.values[POOL]
        name[value] = setting.name
        odd, speed, ttft = PLANNED[value]
        _write_run(run / setting.runs[0], scenario_file, {L: odd.get(L, speed) for L in lens}, ttft)
    before = tree_hash(run)  # the whole tune's folder: its runs, its plan, its state
    done = judge_tune(_pdrepro, run, flag="--judge")
    summary = TuneSummary.model_validate_json((judged(run) / "tune-summary.json").read_text())
    return {"run": run, "plan": plan, "done": done, "summary": summary, "name": name, "before": before}


def test_every_run_passes_its_checks_and_nothing_is_written_into_the_tune(collected):
    run, summary = collected["run"], collected["summary"]
    assert collected["done"].returncode == 0, collected["done"].stderr
    assert all(r.passed and r.problem is None for s in summary.settings for r in s.runs)
    assert tree_hash(run) == collected["before"], "judging wrote into the tune's folder"
    assert not any((run / name).exists() for name in ("tune-summary.json", "tune-report.md", "best-overlay.yaml"))


def test_the_ranking_follows_the_stated_rule_at_each_length(collected):
    summary, name = collected["summary"], collected["name"]
    report = (judged(collected["run"]) / "tune-report.md").read_text()
    assert summary.rule == RULE and RULE in report
    # The titles say "tune" once: the label's own "tune" word (which keeps a tune's folder apart) is left out.
    assert summary.label.startswith("tune ") and summary.scenario in summary.label
    assert report.splitlines()[0] == f"# Tune: {summary.label.removeprefix('tune ')}"
    assert (judged(collected["run"]) / "best-overlay.yaml").read_text().splitlines()[0] == \
        f"# pdrepro tune: {summary.label.removeprefix('tune ')}"
    for length in summary.lengths:
        b = length.baseline
        assert b.spread_GB_s == pytest.approx(max(b.runs_GB_s) - min(b.runs_GB_s), abs=1e-3)
        assert b.spread_GB_s > 0 and b.mean_GB_s == pytest.approx(sum(b.runs_GB_s) / 3, abs=1e-3)
        standing = {f.setting: f.standing for f in length.ranking}
        order = [f.setting for f in length.ranking]
        assert standing[name["2"]] == standing[name["4"]] == "better"
        assert standing[name["8"]] == "within the noise"  # above the mean, inside the spread
        # A tie in bandwidth goes to the lower TTFT.
        assert order.index(name["4"]) == order.index(name["2"]) - 1
        if length.prompt_len == 128:
            assert standing[name["16"]] == "worse" and order[-1] == name["16"]
        else:
            assert standing[name["16"]] == "better" and order[0] == name["16"]
        assert [f.rank for f in length.ranking] == list(range(1, len(order) + 1))


def test_the_best_is_better_at_the_most_lengths_and_worse_at_none(collected):
    summary, name, run = collected["summary"], collected["name"], collected["run"]
    assert summary.best is not None and summary.best.setting == name["4"]
    assert summary.best.better_at == [128, 1024, 4096, 16384]
    assert summary.best.mean_gain_pct == pytest.approx(20.0, abs=0.5)
    # Its figures are its run's own: the summary its folder gives (`pdrepro analyze` into a copy elsewhere).
    figures = {f.setting: f for length in summary.lengths for f in length.ranking if length.prompt_len == 4096}
    copy = run.parent / "copy"
    subprocess.run(["cp", "-r", str(run / name["4"]), str(copy)], check=True)
    assert _pdrepro("analyze", str(copy)).returncode == 0
    own = Summary.model_validate_json((copy / "summary.json").read_text()).rows_by_length()[4096]
    assert figures[name["4"]].bandwidth_GB_s == pytest.approx(own.bandwidth_GB_s)
    overlay = (judged(run) / "best-overlay.yaml").read_text()
    assert f"{POOL}: '16'" not in overlay and f"{POOL}: '4'" in overlay
    assert json.loads((judged(run) / "tune-summary.json").read_text())["best"]["overlay"] == "best-overlay.yaml"


def test_a_baseline_run_that_fails_its_checks_stays_out_of_the_mean_and_the_spread(collected, tmp_path):
    run = tmp_path / "tune"
    shutil.copytree(collected["run"], run)
    failing = collected["plan"].baseline.runs[1]       # the one at 1.04: without it the spread narrows
    (run / failing / "provenance.json").unlink()       # a run the sweep did not make fails provenance_present
    done = judge_tune(_pdrepro, run, flag="--judge")
    assert done.returncode in (0, 1), done.stderr
    summary = TuneSummary.model_validate_json((judged(run) / "tune-summary.json").read_text())
    runs = {r.folder: r for s in summary.settings for r in s.runs}
    assert not runs[failing].passed and "provenance" in (runs[failing].problem or "")
    for length, before in zip(summary.lengths, collected["summary"].lengths):
        b = length.baseline
        assert len(b.runs_GB_s) == 2 and len(before.baseline.runs_GB_s) == 3
        assert b.spread_GB_s == pytest.approx(max(b.runs_GB_s) - min(b.runs_GB_s), abs=1e-3)
        assert b.spread_GB_s < before.baseline.spread_GB_s


def _engine_ceiling(run: Path, scenario_file: Path, ms: dict[int, float], transport: str = "rdma") -> None:
    write_engine_ceiling(run / "engine-ceiling", load_scenario(scenario_file), ms, transport)


def test_each_figure_is_set_against_the_engine_alone_when_the_tune_holds_a_ceiling(collected, tmp_path):
    run = tmp_path / "tune"
    shutil.copytree(collected["run"], run)
    baseline = run / "scenarios" / "baseline.yaml"
    lens = load_scenario(baseline).sweep.prompt_lens
    # The engine alone moves each length's KV in 0.8 of the baseline's per-request transfer time.
    _engine_ceiling(run, baseline, {L: 0.8 * (4.0 + L / 200) for L in lens})
    done = judge_tune(_pdrepro, run, flag="--judge")
    assert done.returncode == 0, done.stderr
    summary = TuneSummary.model_validate_json((judged(run) / "tune-summary.json").read_text())
    assert summary.engine_ceiling == "engine-ceiling/result.json (rdma)"
    for length in summary.lengths:
        engine = length.engine_alone
        assert engine is not None and [r.layout for r in engine.runs] == ["layers"]
        # One run of the engine: its figure is the mean, and with no spread nothing is judged against 0.9 of it.
        assert engine.mean_GB_s == engine.runs[0].GB_s and engine.spread_GB_s is None
        for f in length.ranking:
            assert f.of_engine == round(f.bandwidth_GB_s / engine.mean_GB_s, 3)
            assert f.engine_standing == "not judged"
        base = next(f for f in length.ranking if f.setting == "baseline")
        assert base.of_engine == pytest.approx(0.8, rel=0.05)
    report = (judged(run) / "tune-report.md").read_text()
    assert "| of the engine alone |" in report and "Nearest the engine alone (engine-ceiling/result.json (rdma))" in report
    assert "gives no spread" in report and "--out RUN/engine-ceiling-2" in report


def test_a_ceiling_of_other_bytes_is_refused_in_one_line_and_nothing_is_written(collected, tmp_path):
    run = tmp_path / "tune"
    shutil.copytree(collected["run"], run)
    other = tmp_path / "other.yaml"
    other.write_text((run / "scenarios" / "baseline.yaml").read_text().replace("num_hidden_layers: ",
                                                                              "num_hidden_layers: 1"))
    assert load_scenario(other).kv_bytes(128) != load_scenario(run / "scenarios" / "baseline.yaml").kv_bytes(128)
    _engine_ceiling(run, other, {128: 1.0, 1024: 2.0})
    before = tree_hash(run)
    done = judge_tune(_pdrepro, run, flag="--judge")
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "engine-ceiling/result.json" in done.stderr and "not this run's ceiling" in done.stderr
    assert tree_hash(run) == before


def test_a_per_request_figure_far_above_the_engine_alone_is_named_a_contradiction(collected, tmp_path):
    run = tmp_path / "tune"
    shutil.copytree(collected["run"], run)
    baseline = run / "scenarios" / "baseline.yaml"
    lens = load_scenario(baseline).sweep.prompt_lens
    _engine_ceiling(run, baseline, {L: 3 * (4.0 + L / 200) for L in lens})  # the engine a third as fast
    judge_tune(_pdrepro, run, flag="--judge")
    summary = TuneSummary.model_validate_json((judged(run) / "tune-summary.json").read_text())
    said = [p for p in summary.problems if "not a measurement of this box" in p]
    assert len(said) == sum(len(t.ranking) for t in summary.lengths)  # every figure, each named


def test_while_a_run_measured_nothing_no_best_is_named(collected, tmp_path):
    run = tmp_path / "tune"
    shutil.copytree(collected["run"], run)
    best = collected["summary"].best
    assert best is not None
    missing = collected["plan"].baseline.runs[2]
    shutil.rmtree(run / missing)  # its job has not run yet
    done = judge_tune(_pdrepro, run, flag="--judge")
    assert done.returncode == 1, done.stderr
    summary = TuneSummary.model_validate_json((judged(run) / "tune-summary.json").read_text())
    assert summary.best is None and summary.unmeasured == [missing]
    report = (judged(run) / "tune-report.md").read_text()
    assert f"Best: not judged yet. 1 of {len(collected['name']) + 3} run(s) measured nothing ({missing})" in report
    overlay = (judged(run) / "best-overlay.yaml").read_text()
    assert f"# Not judged yet: {missing} measured nothing" in overlay and overlay.rstrip().endswith("{}")


def test_better_means_the_intervals_separate_and_each_figure_states_its_interval(collected):
    """Setting "8" sits inside the baseline's repeats (its interval overlaps the baseline's): never better, however
    far above the mean it is; "2" and "4" lie wholly above: better. Every figure holds its own interval, drawn as
    the report says, and each length states the noise floor its baseline's repeats showed."""
    summary, name = collected["summary"], collected["name"]
    report = (judged(collected["run"]) / "tune-report.md").read_text()
    for length in summary.lengths:
        b = length.baseline
        assert b.interval is not None and b.interval.runs == 3 and b.interval.point == pytest.approx(b.mean_GB_s)
        assert b.noise_floor is not None and b.noise_floor.spread == pytest.approx(b.spread_GB_s, abs=1e-3)
        assert f"Noise floor: {b.noise_floor.of} spread {b.noise_floor.spread:.3f} GB/s" in report
        figures = {f.setting: f for f in length.ranking}
        for f in length.ranking:
            assert f.interval is not None and f.interval.low <= f.bandwidth_GB_s + 1e-4
            assert f.bandwidth_GB_s - 1e-4 <= f.interval.high
            assert f"| {f.interval.low:.3f} to {f.interval.high:.3f} |" in report
            assert f.interval.method.startswith("95 % bootstrap, 2000 resamples, seeded")
            if f.setting != "baseline":
                assert "the baseline's 3 repeats" in f.interval.method and f.interval.runs == 1
                assert (f.standing == "within the noise") == f.interval.overlaps(b.interval)
        assert figures[name["8"]].interval.overlaps(b.interval) and figures[name["8"]].standing == "within the noise"
        assert figures[name["8"]].bandwidth_GB_s > b.mean_GB_s  # above the mean, and still not better
        for better in (name["2"], name["4"]):
            assert figures[better].interval.low > b.interval.high and figures[better].standing == "better"
        # The ranking by intervals: the baseline is surely beaten by the settings wholly above it.
        assert set(figures["baseline"].beaten_by) >= {name["2"], name["4"]}
        assert name["8"] not in figures["baseline"].beaten_by
    assert "How sure: each figure carries a confidence interval" in report


def test_a_setting_the_same_as_the_baseline_is_never_better(collected, tmp_path):
    """Two settings measured exactly as a baseline run (the same transfer times): within the noise everywhere, and
    no best is named even though one of them sits above the baseline's mean."""
    run = tmp_path / "tune"
    shutil.copytree(collected["run"], run)
    name = collected["name"]
    for value, speed in (("2", BASELINE["baseline-2"]), ("4", BASELINE["baseline-1"]),
                         ("16", BASELINE["baseline-2"])):
        folder = run / name[value]
        shutil.rmtree(folder)
        lens = load_scenario(run / "scenarios" / f"{name[value]}.yaml").sweep.prompt_lens
        _write_run(folder, run / "scenarios" / f"{name[value]}.yaml", dict.fromkeys(lens, speed), 1.0)
    done = judge_tune(_pdrepro, run, flag="--collect")
    assert done.returncode == 0, done.stderr
    summary = TuneSummary.model_validate_json((judged(run) / "tune-summary.json").read_text())
    assert summary.best is None
    for length in summary.lengths:
        for f in length.ranking:
            if f.setting != "baseline":
                assert f.standing == "within the noise", (length.prompt_len, f.setting)
    assert "Best: none." in (judged(run) / "tune-report.md").read_text()
