"""The engine alone measured more than once beside a tune (RUN/engine-ceiling and RUN/engine-ceiling-<n>): each
run's figure, their mean and spread per length; every setting set against the mean, and held against 0.9 of the
engine with its spread as doubt (tunesummary.ENGINE_RULE); a figure above 1.2 of the engine's highest run named
a contradiction; and a repeat that is not one refused on one line naming its folder and the fix.

The tune here is a fixture: rendered with `--render slurm`, each run folder written as a job leaves it
(tests/runbuilder.py), and the engine's runs written as gpu-check writes them (tests/ceilingfile.py), with rates
chosen against the baseline's first run so that each standing is crossed on purpose. Real runs of the engine
alone on an H200 (four in a row) are used where the spread matters as measured."""

from __future__ import annotations

import re
import shutil
import statistics
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

from pdrepro.rundir.tunesummary import ENGINE_RULE, ENGINE_SHARE, TuneSummary
from pdrepro.scenario.model import load_scenario

REPO = Path(__file__).resolve().parents[2]
POOL = "SGLANG_DISAGGREGATION_THREAD_POOL_SIZE"
# Per-request speed of each run against baseline-1's (the transfer time divides by it).
SPEED = {"baseline-1": 1.0, "baseline-2": 1.02, "baseline-3": 0.98}
SETTING_SPEED = {"2": 1.2, "4": 0.95, "8": 0.8}
# Four runs of the engine alone on an H200 over TCP, each its best layout at 4096 and 16384 tokens (GB/s).
H200_ENGINE = {4096: [1.631, 1.651, 1.801, 1.501], 16384: [1.572, 1.896, 1.618, 1.616]}


def _ms(L: int) -> float:
    """baseline-1's per-request transfer time at L tokens, milliseconds (runbuilder's rows here)."""
    return 4.0 + L / 200


def _pdrepro(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pdrepro", *args], env=env(), cwd=REPO, capture_output=True,
                          text=True, timeout=120)


@pytest.fixture(scope="module")
def tune(tmp_path_factory) -> dict:
    _, run, plan = render_tune(tmp_path_factory.mktemp("engine-repeats"), f"{POOL}={','.join(SETTING_SPEED)}")
    name = {}
    for setting in plan.settings:
        scenario = load_scenario(run / "scenarios" / f"{setting.name}.yaml")
        for folder in setting.runs:
            speed = SPEED[folder] if not setting.values else SETTING_SPEED[setting.values[POOL]]
            build_run(run / folder, scenario, rows=[Row(L, 20.0 + L / 50, _ms(L) / speed)
                                                    for L in scenario.sweep.prompt_lens])
            for role in ("prefill", "decode"):  # the engine's start-up lines, after the server's own first line
                log = run / folder / "logs" / f"{role}.log"
                lines = log.read_text().splitlines(keepends=True)
                lines[1:1] = [line + "\n" for line in mooncake_startup("rdma", nics=1)]
                log.write_text("".join(lines))
        if setting.values:
            name[setting.values[POOL]] = setting.name
    return {"run": run, "name": name, "scenario": load_scenario(run / "scenarios" / "baseline.yaml")}


def _copy(tune: dict, tmp_path: Path) -> Path:
    run = tmp_path / "tune"
    shutil.copytree(tune["run"], run, symlinks=True)
    return run


def _engine(run: Path, folder: str, tune: dict, rate: float, transport: str = "rdma",
            layouts: dict[str, float] | None = None) -> None:
    """A run of the engine alone whose best layout moves each length ``rate`` times as fast as baseline-1."""
    lens = tune["scenario"].sweep.prompt_lens
    write_engine_ceiling(run / folder, tune["scenario"], {L: _ms(L) / rate for L in lens}, transport, layouts)


def _collect(run: Path) -> tuple[subprocess.CompletedProcess, TuneSummary | None]:
    done = judge_tune(_pdrepro, run)
    path = judged(run) / "tune-summary.json"
    return done, TuneSummary.model_validate_json(path.read_text()) if path.exists() else None


def test_each_run_of_the_engine_counts_and_every_figure_is_held_against_its_mean_and_spread(tune, tmp_path):
    run = _copy(tune, tmp_path)
    # Three runs; in the second the one layout is the faster, so its figure is that layout's.
    _engine(run, "engine-ceiling", tune, 1.05)
    _engine(run, "engine-ceiling-2", tune, 1.10, layouts={"one": 1.0, "layers": 1.3})
    _engine(run, "engine-ceiling-3", tune, 1.00)
    done, summary = _collect(run)
    assert done.returncode == 0 and summary is not None, done.stderr
    sources = ["engine-ceiling/result.json", "engine-ceiling-2/result.json", "engine-ceiling-3/result.json"]
    assert summary.engine_ceiling == f"{', '.join(sources)} (rdma)" and summary.engine_rule == ENGINE_RULE
    seen = set()
    for length in summary.lengths:
        engine = length.engine_alone
        assert engine is not None and [r.source for r in engine.runs] == sources
        assert [r.layout for r in engine.runs] == ["layers", "one", "layers"]
        rates = [r.GB_s for r in engine.runs]
        assert engine.mean_GB_s == pytest.approx(statistics.fmean(rates))
        assert engine.spread_GB_s == pytest.approx(max(rates) - min(rates)) and engine.spread_GB_s > 0
        for f in length.ranking:
            assert f.of_engine == round(f.bandwidth_GB_s / engine.mean_GB_s, 3)
            b = f.bandwidth_GB_s
            want = ("at or above 0.9" if b >= ENGINE_SHARE * max(rates) else
                    "below 0.9" if b < ENGINE_SHARE * min(rates) else "within the engine's spread")
            assert f.engine_standing == want, (length.prompt_len, f.setting)
            seen.add(f.engine_standing)
        # The fixture's rates put a setting on each side of the band and one inside it.
        standing = {f.setting: f.engine_standing for f in length.ranking}
        assert standing[tune["name"]["2"]] == "at or above 0.9"
        assert standing[tune["name"]["4"]] == "within the engine's spread"
        assert standing[tune["name"]["8"]] == "below 0.9"
    assert seen == {"at or above 0.9", "below 0.9", "within the engine's spread"}
    assert not [p for p in summary.problems if "not a measurement of this box" in p]
    report = (judged(run) / "tune-report.md").read_text()
    for length in summary.lengths:
        engine = length.engine_alone
        assert engine is not None
        line = next(x for x in report.splitlines() if x.startswith("Engine alone: 3 runs")
                    and f"{engine.runs[0].GB_s:.3f} GB/s" in x)
        assert f"mean {engine.mean_GB_s:.3f} GB/s, spread {engine.spread_GB_s:.3f} GB/s (the engine's own noise floor" in line
        # Its interval over the three runs, the method stated.
        assert engine.interval is not None and engine.interval.runs == 3
        assert engine.interval.low <= engine.mean_GB_s <= engine.interval.high
        assert f"{engine.interval.low:.3f} to {engine.interval.high:.3f} GB/s ({engine.interval.method})" in line
        assert all(s in line for s in sources)
    nearest = next(x for x in report.splitlines() if x.startswith("Nearest the engine alone"))
    reach = [f.setting for f in summary.lengths[0].ranking if f.engine_standing == "at or above 0.9"]
    assert f"{summary.lengths[0].prompt_len} tokens:" in nearest and f"at or above 0.9 of it: {', '.join(reach)}" in nearest
    assert f"Against the engine alone: {ENGINE_RULE}." in report and "| against 0.9 of the engine |" in report


def test_a_gap_in_the_numbers_reads_every_repeat_there_and_names_it(tune, tmp_path):
    run = _copy(tune, tmp_path)
    _engine(run, "engine-ceiling", tune, 1.05)
    _engine(run, "engine-ceiling-3", tune, 1.00)  # no engine-ceiling-2
    _engine(run, "engine-ceiling-10", tune, 1.02)  # ordered by number, not by name
    done, summary = _collect(run)
    assert done.returncode == 0 and summary is not None, done.stderr
    assert summary.engine_ceiling is not None and summary.engine_ceiling.startswith(
        "engine-ceiling/result.json, engine-ceiling-3/result.json, engine-ceiling-10/result.json")
    assert all(length.engine_alone is not None and len(length.engine_alone.runs) == 3 for length in summary.lengths)


def test_the_h200s_four_runs_of_the_engine_give_its_spread(tune, tmp_path):
    """The four runs measured on an H200 (rates as gpu-check recorded them, rounded here), at the fixture's
    lengths of the same bytes: the spread the tune holds figures against is the one the box showed."""
    run = _copy(tune, tmp_path)
    scenario = tune["scenario"]
    for i, n in enumerate(["engine-ceiling", "engine-ceiling-2", "engine-ceiling-3", "engine-ceiling-4"]):
        ms = {L: scenario.kv_bytes(L) / (H200_ENGINE[16384 if L > 2048 else 4096][i] * 1e9) * 1e3
              for L in scenario.sweep.prompt_lens}
        write_engine_ceiling(run / n, scenario, ms, "rdma")
    done, summary = _collect(run)
    assert summary is not None, done.stderr
    for length in summary.lengths:
        measured = H200_ENGINE[16384 if length.prompt_len > 2048 else 4096]
        engine = length.engine_alone
        assert engine is not None
        assert [round(r.GB_s, 3) for r in engine.runs] == measured
        assert engine.spread_GB_s == pytest.approx(max(measured) - min(measured), abs=1e-3)
        # About a fifth of the mean: what one run of the engine alone could not show.
        assert engine.spread_GB_s / engine.mean_GB_s > 0.15
    # The guide quotes these runs' range per length.
    page = " ".join((REPO / "docs" / "guide" / "tune.md").read_text().split())
    for L, rates in H200_ENGINE.items():
        assert f"{min(rates):.2f} to {max(rates):.2f} GB/s at {L}" in page, L


def test_a_contradiction_is_held_against_the_engines_highest_run(tune, tmp_path):
    run = _copy(tune, tmp_path)
    _engine(run, "engine-ceiling", tune, 0.5)
    _engine(run, "engine-ceiling-2", tune, 0.95)  # the mean 0.725 of baseline-1, the highest run 0.95
    done, summary = _collect(run)
    assert summary is not None, done.stderr
    named = {(p.split(" at ")[0], int(p.split(" at ")[1].split(" tokens")[0]))
             for p in summary.problems if "not a measurement of this box" in p}
    over_top, over_mean_only = set(), set()
    for length in summary.lengths:
        engine = length.engine_alone
        assert engine is not None
        for f in length.ranking:
            if f.bandwidth_GB_s > 1.2 * engine.highest():
                over_top.add((f.setting, length.prompt_len))
            elif f.bandwidth_GB_s > 1.2 * engine.mean_GB_s:
                over_mean_only.add((f.setting, length.prompt_len))
    assert named == over_top
    # Above 1.2 of the mean but not of the highest run: within what the engine itself reached, no contradiction.
    assert over_mean_only and {s for s, _ in over_mean_only} >= {"baseline"}
    assert {s for s, _ in named} == {tune["name"]["2"]}  # 1.2 of baseline-1: above 1.2 of the highest run


def _one_line_refusal(run: Path, before: str) -> str:
    done, summary = _collect(run)
    assert done.returncode == 2 and summary is None, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert tree_hash(run) == before
    return lines[0]


@pytest.mark.parametrize(("bend", "says"), [
    ("other-bytes", "not this run's ceiling"),
    ("other-transport", "must be of one transport"),
    ("copy", "a copy (or a link) of that run"),
    ("link-to-first", "a copy (or a link) of that run"),
    ("file", "is not a folder"),
    ("dangling-link", "is a link to nothing"),
    ("empty", "holds no result.json"),
    ("edited", "the file was edited"),
])
def test_a_repeat_that_is_not_one_is_refused_in_one_line_naming_it_and_the_fix(tune, tmp_path, bend, says):
    run = _copy(tune, tmp_path)
    _engine(run, "engine-ceiling", tune, 1.05)
    repeat = run / "engine-ceiling-2"
    if bend == "other-bytes":
        other = tmp_path / "other.yaml"
        other.write_text((run / "scenarios" / "baseline.yaml").read_text().replace("num_hidden_layers: ",
                                                                                  "num_hidden_layers: 1"))
        o = load_scenario(other)
        write_engine_ceiling(repeat, o, {L: _ms(L) for L in o.sweep.prompt_lens})
    elif bend == "other-transport":
        _engine(run, "engine-ceiling-2", tune, 1.0, "tcp")
    elif bend == "copy":
        shutil.copytree(run / "engine-ceiling", repeat)
    elif bend == "link-to-first":
        repeat.symlink_to("engine-ceiling")
    elif bend == "file":
        repeat.write_text("{}")
    elif bend == "dangling-link":
        repeat.symlink_to(tmp_path / "nowhere")
    elif bend == "empty":
        repeat.mkdir()
    elif bend == "edited":
        _engine(run, "engine-ceiling-2", tune, 1.0)
        text = (repeat / "result.json").read_text()
        (repeat / "result.json").write_text(text.replace('"median_GB_s": ', '"median_GB_s": 9', 1))
    said = _one_line_refusal(run, tree_hash(run))
    assert "engine-ceiling-2" in said and says in said, said
    # The fix measures that folder again with the tune's own bytes (and the first run's transport where they differ).
    assert re.search(r"`pdrepro gpu-check --scenario RUN/scenarios/baseline\.yaml --layouts one,layers "
                     r"--out RUN/engine-ceiling-2( --transport rdma)?`", said), said


@pytest.mark.parametrize("name", ["engine-ceiling-1", "engine-ceiling-0", "engine-ceiling-02"])
def test_a_folder_numbered_as_no_repeat_is_refused_rather_than_left_out(tune, tmp_path, name):
    run = _copy(tune, tmp_path)
    _engine(run, "engine-ceiling", tune, 1.05)
    _engine(run, name, tune, 1.0)
    said = _one_line_refusal(run, tree_hash(run))
    assert name in said and "engine-ceiling-2, engine-ceiling-3" in said and "rename it" in said


def test_one_run_of_the_engine_judges_nothing_against_its_spread_and_says_how_to_repeat(tune, tmp_path):
    run = _copy(tune, tmp_path)
    _engine(run, "engine-ceiling", tune, 1.05)
    done, summary = _collect(run)
    assert summary is not None, done.stderr
    assert all(f.engine_standing == "not judged" for length in summary.lengths for f in length.ranking)
    assert all(length.engine_alone is not None and length.engine_alone.spread_GB_s is None
               for length in summary.lengths)
    report = (judged(run) / "tune-report.md").read_text()
    assert "Engine alone: 1 run," in report and "gives no spread" in report
    # The repeat it asks for names the tune's own scenario file, so it measures the bytes the runs moved.
    assert ("`pdrepro gpu-check --scenario RUN/scenarios/baseline.yaml --layouts one,layers "
            "--out RUN/engine-ceiling-2`") in report
    assert "at or above 0.9 of it" not in report
