"""`pdrepro tune` as a user runs it: a grid of two knobs on the stand-in servers (real stack up, sweep with the
stand-in bench client, stack down, each a child process's own), the baseline three times, one setting made
clearly faster through the speed the stand-in servers move the KV at (tests/tune/tunescript.py), ranked first and
written as the overlay; the judging leaves every run folder as it was; an interrupted tune resumes at the run it
reached, also after the machine went away; a cluster's job array rendered, nothing started; bad input one line."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import jsonschema
import pytest
import yaml
from ceilingfile import write_engine_ceiling
from judgeout import judge_tune, judged
from runkinds import tree_hash
from stackhelp import env, make_site, one_line, pdrepro, stop_left

from pdrepro.launch.stack import ownership, record
from pdrepro.rundir import armsstate, tuneplan
from pdrepro.rundir.summarymodel import Summary
from pdrepro.rundir.tunesummary import TuneSummary
from pdrepro.scenario import knobs as knob_data
from pdrepro.scenario import schemagen
from pdrepro.scenario.model import load_scenario, scenario_from_dict

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "tests" / "tune" / "tunescript.py"
GOLDEN = REPO / "tests" / "tune" / "golden" / "tune-array.sbatch"
POOL = "SGLANG_DISAGGREGATION_THREAD_POOL_SIZE"


@pytest.fixture
def site(tmp_path):
    made = make_site(tmp_path)
    dataset = tmp_path / "sharegpt.json"
    dataset.write_text("[]")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python").symlink_to(sys.executable)  # the bench client's argv starts with the image's `python`
    made["dataset"], made["path"] = dataset, f"{bin_dir}{os.pathsep}{os.environ['PATH']}"
    yield made
    stop_left([*made["run"].glob("*/"), *(tmp_path / "moved").glob("*/")])


def _argv(site: dict, *grid: str, one_at_a_time: bool = False) -> list[str]:
    # --force-tcp as the shared option (site["options"] holds it), as every command that runs members spells it.
    return [sys.executable, str(SCRIPT), "tune", *site["options"], "--dataset", str(site["dataset"]), *grid,
            *(["--one-at-a-time"] if one_at_a_time else []), "--stack-args", "--poll 0.1 --grace 5",
            "--sweep-args", "--length-timeout 60 --wait-timeout 30", "--out", str(site["run"])]


def _env(site: dict, **extra: str) -> dict[str, str]:
    return env(PATH=site["path"], **extra)




def _summary(run: Path) -> TuneSummary:
    written = json.loads((run / "tune-summary.json").read_text())
    schema = json.loads((schemagen.shipped_dir() / schemagen.file_name("tune-summary")).read_text())
    jsonschema.Draft202012Validator(schema).validate(written)  # the shipped schema holds what tune writes
    return TuneSummary.model_validate(written)


def _run_bandwidth(folder: Path) -> dict[int, float | None]:
    """A run's per-request KV bandwidth per length, from the summary its own sweep's analysis wrote."""
    summary = Summary.model_validate_json((folder / "summary.json").read_text())
    return {r.prompt_len: r.bandwidth_GB_s for r in summary.rows}


def test_a_grid_of_two_knobs_ranks_the_faster_setting_first_and_writes_it_as_the_overlay(site):
    run = site["run"]
    done = subprocess.run(_argv(site, "--grid", f"{POOL}=4,16", "--grid=--page-size=1,16"),
                          env=_env(site, TUNE_FAST="--page-size=16", TUNE_SLOW=f"{POOL}=4"), cwd=REPO,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode in (0, 1) and "Traceback" not in done.stderr, done.stdout + done.stderr
    plan = tuneplan.read(run)
    assert plan is not None and plan.mode == "full grid"
    assert plan.baseline.runs == ("baseline-1", "baseline-2", "baseline-3")
    # The full grid: every combination of the two knobs (the scenario sets neither, so none is the baseline).
    combos = sorted(tuple(sorted(s.values.items())) for s in plan.settings if s.values)
    assert combos == sorted(((("--page-size", p), (POOL, t))) for t in ("4", "16") for p in ("1", "16"))
    state = armsstate.read(run)
    assert state is not None and all(a.status == "done" for a in state.arms)
    order = [a.name for a in state.arms]
    assert order[0] == "baseline-1" and order[-1] == "baseline-3" and len(order) == 7  # spread over the runs

    for setting in plan.settings:
        for folder in setting.runs:
            rec = record.read(run / folder)
            assert rec.stopped_at is not None and ownership.marked(rec.stack_id) == []
            prefill = next(p for p in rec.processes if str(p.role) == "prefill")
            # The setting reached the servers: its variable in their environment, its flag in their argv.
            assert prefill.env.get(POOL) == setting.values.get(POOL)
            argv = list(prefill.argv)
            flag = argv[argv.index("--page-size") + 1] if "--page-size" in argv else None
            assert flag == setting.values.get("--page-size")

    summary = _summary(run)
    by_values = {tuple(sorted(s.values.items())): s.name for s in summary.settings}
    fast = by_values[(("--page-size", "16"), (POOL, "16"))]
    slow = by_values[(("--page-size", "1"), (POOL, "4"))]
    assert [length.prompt_len for length in summary.lengths] == [128, 1024, 4096, 16384]
    for length in summary.lengths:
        base = length.baseline
        # The baseline's figures are its runs' own summaries', its spread their range.
        own = [_run_bandwidth(run / f)[length.prompt_len] for f in plan.baseline.runs]
        assert base.runs_GB_s == pytest.approx(own)
        assert base.spread_GB_s == pytest.approx(max(own) - min(own), abs=1e-3) and base.spread_GB_s > 0
        assert base.mean_GB_s == pytest.approx(sum(own) / 3, abs=1e-3)
        first = length.ranking[0]
        assert first.setting == fast and first.rank == 1 and first.standing == "better"
        assert first.bandwidth_GB_s == pytest.approx(_run_bandwidth(run / fast)[length.prompt_len])
        standing = {f.setting: f.standing for f in length.ranking}
        assert standing[slow] == "worse"
        # The two settings whose speed-ups cancel stay within the baseline's noise: not called better.
        assert [s for s, st in standing.items() if st == "better"] == [fast]
        ranks = [f.bandwidth_GB_s for f in length.ranking]
        assert ranks == sorted(ranks, reverse=True)
    assert summary.best is not None and summary.best.setting == fast
    assert summary.best.better_at == [128, 1024, 4096, 16384]
    assert set(summary.best.evidence) == {fast, *plan.baseline.runs}

    # Each run's verdict is the one `pdrepro check` gives its folder, and the exit status follows them.
    passed = {r.folder: r.passed for s in summary.settings for r in s.runs}
    assert passed == {f: pdrepro("check", str(run / f)).returncode == 0 for f in passed}
    assert done.returncode == (0 if all(passed.values()) else 1)

    # The overlay over the scenario is the best setting's own scenario, and loads as a scenario.
    overlay = yaml.safe_load((run / "best-overlay.yaml").read_text())
    data = load_scenario(site["options"][1]).to_dict()
    data["launch"]["env"].update(overlay["launch"]["env"])
    data["launch"]["extra_server_args"] = overlay["launch"]["extra_server_args"]
    merged = scenario_from_dict(data, "the scenario with the overlay")
    assert merged.fingerprint == load_scenario(run / "scenarios" / f"{fast}.yaml").fingerprint
    report = (run / "tune-report.md").read_text()
    assert f"Best: **{fast}**" in report and summary.rule in report
    # Over TCP: neither knob is one the knob data marks RDMA-only, so none is named as one the box cannot judge.
    assert summary.transport == "tcp" and summary.tcp_cannot_judge == []
    assert "marks none of the grid's knobs as RDMA-only" in report

    # Judging again (by the older name, --collect, too) writes nothing into the tune and ranks it the same.
    before = tree_hash(run)
    for flag in ("--judge", "--collect"):
        again = judge_tune(pdrepro, run, flag=flag)
        assert again.returncode == done.returncode, again.stderr
        assert tree_hash(run) == before, f"tune {flag} wrote into the tune"
        assert _summary(judged(run)) == summary
        assert (judged(run) / "tune-report.md").read_text() == report

    # The runner wrote its three outputs once and knows them as its own: the same command again resumes past
    # every run and writes them again; a report a person edited is refused by name before anything runs.
    edited = report + "\nmy notes on this tune\n"
    (run / "tune-report.md").write_text(edited)
    refused = subprocess.run(_argv(site, "--grid", f"{POOL}=4,16", "--grid=--page-size=1,16"),
                             env=_env(site, TUNE_FAST="--page-size=16", TUNE_SLOW=f"{POOL}=4"), cwd=REPO,
                             capture_output=True, text=True, timeout=600)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr, refused.stdout + refused.stderr
    assert f"{run / 'tune-report.md'}: not written by pdrepro tune" in refused.stderr
    assert "move that file aside" in refused.stderr and "== arm" not in refused.stdout
    assert (run / "tune-report.md").read_text() == edited


def _done_lengths(folder: Path) -> list[str]:
    try:
        state = json.loads((folder / "sweep-state.json").read_text())
    except (OSError, ValueError):
        return []
    return [k for k, v in state.get("lengths", {}).items() if v.get("status") == "done"]


def _stop_when(proc: subprocess.Popen, folder: Path, signum: int) -> tuple[str, str]:
    try:
        deadline = time.monotonic() + 300
        while not _done_lengths(folder) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proc.poll() is None, f"the tune ended before {folder.name} measured a length"
        proc.send_signal(signum)
        return proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_an_interrupted_tune_resumes_at_the_run_it_reached_also_on_a_fresh_machine(site):
    run = site["run"]
    argv = _argv(site, "--grid", "MC_NUM_QP_PER_EP=2", "--grid=--page-size=16", one_at_a_time=True)
    proc = subprocess.Popen(argv, env=_env(site), cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    out, err = _stop_when(proc, run / "s1", signal.SIGTERM)
    assert proc.returncode == 143 and "Traceback" not in err, out + err
    state = armsstate.read(run)
    assert state is not None and [(a.name, a.status, a.exit) for a in state.arms][:2] == [
        ("baseline-1", "done", 0), ("s1", "stopped", 143)]
    assert record.read(run / "s1").stopped_at is not None
    assert not (run / "tune-summary.json").exists(), "a stopped tune was judged"
    kept = {L: (run / "s1" / "bench" / f"result-{L}.jsonl").read_bytes() for L in _done_lengths(run / "s1")}
    assert kept

    # The machine goes away mid-run: the tune is killed outright, its servers with the machine, and the run
    # folder comes back on a fresh boot, at another path, with the stack record of the old boot.
    proc = subprocess.Popen(argv, env=_env(site), cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    _stop_when(proc, run / "baseline-2", signal.SIGKILL)
    assert pdrepro("stack", "down", str(run / "baseline-2"), "--grace", "1").returncode == 0
    path = record.path(run / "baseline-2")
    old = json.loads(path.read_text())
    path.write_text(json.dumps({**old, "boot_id": "0" * 8 + old["boot_id"][8:], "stopped_at": None}))
    state = armsstate.read(run)
    assert state is not None and [a.status for a in state.arms][:3] == ["done", "done", "running"]
    moved = site["tmp"] / "moved"
    shutil.move(str(run), str(moved))
    argv[argv.index(str(run))] = str(moved)

    # The engine alone measured into the tune's folder before it resumes (as gpu-check --out RUN/engine-ceiling):
    # the tune runs on beside it and its collection sets each figure against it.
    baseline = load_scenario(moved / "scenarios" / "baseline.yaml")
    write_engine_ceiling(moved / "engine-ceiling", baseline,  # 1 GB/s at every length
                         {L: baseline.kv_bytes(L) / 1e6 for L in baseline.sweep.prompt_lens}, "tcp")
    again = subprocess.run(argv, env=_env(site), cwd=REPO, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "its arms were recorded in other words for the same requests" in again.stdout
    assert "== arm baseline-1: done already, skipped" in again.stdout
    assert "== arm s1: done already, skipped" in again.stdout
    # The sweep's own resume kept what the first attempt measured: the same bytes, not measured again.
    assert {L: (moved / "s1" / "bench" / f"result-{L}.jsonl").read_bytes() for L in kept} == kept
    rec = record.read(moved / "baseline-2")
    assert rec.boot_id == ownership.boot_id() and rec.stopped_at is not None
    summary = _summary(moved)
    assert all(r.passed for s in summary.settings for r in s.runs)
    assert all(len(length.baseline.runs_GB_s) == 3 for length in summary.lengths)
    assert summary.engine_ceiling == "engine-ceiling/result.json (tcp)" and not summary.unmeasured
    assert all(length.engine_alone is not None and all(f.of_engine is not None for f in length.ranking)
               for length in summary.lengths)
    # Another tune's options on the same folder are still refused (only the paths may move).
    other = subprocess.run([*argv[:-1], str(moved), "--baseline-repeats", "4"], env=_env(site), cwd=REPO,
                           capture_output=True, text=True, timeout=120)
    assert "holds the tune" in one_line(other)
    report = (moved / "tune-report.md").read_text()
    # Over TCP, the knob data names the grid's knobs such a box cannot judge (MC_NUM_QP_PER_EP acts on RDMA only),
    # and only those: the page size acts whatever the transport.
    assert summary.transport == "tcp"
    assert [k.name for k in summary.tcp_cannot_judge] == ["MC_NUM_QP_PER_EP"]
    why = knob_data.tcp_cannot_judge("MC_NUM_QP_PER_EP")
    assert why and summary.tcp_cannot_judge[0].why == why and knob_data.tcp_cannot_judge("--page-size") is None
    assert "this box cannot judge MC_NUM_QP_PER_EP" in report and why in report


@pytest.mark.parametrize("wrong_one", ["engine-ceiling", "engine-ceiling-3"])
def test_a_ceiling_beside_the_tune_that_is_not_of_it_is_refused_before_any_stack_starts(site, wrong_one):
    """The engine alone put into RUN/engine-ceiling of another model's bytes, or a repeat of it (here
    engine-ceiling-3 beside a right first run, -2 missing): refused in one line naming that folder, and no run
    starts (the GPU time is not spent on a tune whose collection would refuse it)."""
    run = site["run"]
    argv = _argv(site, "--grid", "MC_NUM_QP_PER_EP=2")
    right = load_scenario(site["options"][1])
    other = right.to_dict()
    other["model"]["geometry"]["num_hidden_layers"] += 1
    wrong = scenario_from_dict(other, "a scenario of one more layer")
    if wrong_one != "engine-ceiling":
        write_engine_ceiling(run / "engine-ceiling", right, {L: right.kv_bytes(L) / 1e6 for L in right.sweep.prompt_lens})
    write_engine_ceiling(run / wrong_one, wrong, {L: wrong.kv_bytes(L) / 1e6 for L in wrong.sweep.prompt_lens})
    done = subprocess.run(argv, env=_env(site), cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    said = one_line(done)
    assert f"{wrong_one}/result.json" in said and "not this run's ceiling" in said
    assert f"--out RUN/{wrong_one}`" in said  # the fix names the folder to measure again
    assert not any((run / name).exists() for name in ("baseline-1", "s1", "tune-summary.json"))


def _golden_text(run: Path) -> str:
    return (run / "tune-array.sbatch").read_text().replace(str(run), "RUN")


def test_render_slurm_writes_a_job_array_over_one_job_per_run_and_starts_nothing(tmp_path):
    run = tmp_path / "tune"
    done = pdrepro("tune", "--render", "slurm", "--scenario", "h20-qwen3-235b-1p1d", "--grid", f"{POOL}=4,16",
                    "--grid=--page-size=16", "--out", str(run))
    assert done.returncode == 0, done.stderr
    plan = tuneplan.read(run)
    assert plan is not None
    folders = [f for s in plan.settings for f in s.runs]
    assert sorted(folders) == ["baseline-1", "baseline-2", "baseline-3", "s1", "s2"]
    text = _golden_text(run)
    if os.environ.get("PDREPRO_UPDATE_GOLDEN") == "1":
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(text)
    assert text == GOLDEN.read_text()
    assert bash_syntax_ok(run / "tune-array.sbatch")
    # Task 1 of the array runs the second run's own job script (which, outside an allocation, stops at once).
    task = subprocess.run(["bash", str(run / "tune-array.sbatch")], capture_output=True, text=True, timeout=30,
                          env={**os.environ, "SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_JOB_ID": "7",
                               "SLURM_SUBMIT_DIR": str(tmp_path)})
    assert f"array task 1 runs {plan.settings[1].runs[0]}" in task.stdout, task.stdout + task.stderr
    assert task.returncode == 2 and "no SLURM allocation here" in task.stderr
    outside = subprocess.run(["bash", str(run / "tune-array.sbatch")], capture_output=True, text=True, timeout=30,
                             env={k: v for k, v in os.environ.items() if not k.startswith("SLURM_")})
    assert outside.returncode == 2 and "submit this script with sbatch" in outside.stderr
    for setting in plan.settings:
        for folder in setting.runs:
            (script,) = (run / folder / "job").glob("*.sbatch")
            body = script.read_text()
            assert f"--out {run / folder}" in body  # its run lands where --collect reads it
            for key, value in setting.values.items():
                assert (f"{key}={value}" in body) if not key.startswith("--") else (f"{key} {value}" in body)
            if not setting.values:
                assert POOL not in body and "--page-size" not in body
            assert not (run / folder / "stack.json").exists() and not (run / folder / "bench").exists()
    # Before the tasks ran, collecting names each missing run and fails; nothing is called best.
    before = tree_hash(run)
    collected = judge_tune(pdrepro, run, flag="--collect")
    assert collected.returncode == 1
    summary = _summary(judged(run))
    assert summary.best is None and len(summary.problems) == len(folders)
    assert yaml.safe_load((judged(run) / "best-overlay.yaml").read_text()) == {}
    assert tree_hash(run) == before


def bash_syntax_ok(path: Path) -> bool:
    return subprocess.run(["bash", "-n", str(path)], capture_output=True).returncode == 0


def _model(tmp: Path) -> list[str]:
    model = tmp / "model"
    model.mkdir(exist_ok=True)
    (model / "config.json").write_text("{}")
    return ["--model", str(model), "--dataset", str(model / "config.json")]


@pytest.mark.parametrize("args, says", [
    (["--grid", "FOO"], "--grid 'FOO': give KEY=v1,v2"),
    (["--grid", "=1,2"], "give KEY=v1,v2"),
    (["--grid", "foo_bar=1"], "is no environment variable name"),
    (["--grid=--Page_Size=1"], "is no server flag"),
    (["--grid", f"{POOL}=4,,16"], "is not one plain word"),
    (["--grid", f"{POOL}=4 16"], "is not one plain word"),
    (["--grid", f"{POOL}=4,4"], "a value is given twice"),
    (["--grid", f"{POOL}=4", "--grid", f"{POOL}=16"], f"--grid {POOL}: given twice"),
    (["--grid=--tp-size=1,2"], "--tp-size is a server flag the launch plan sets itself"),
    (["--grid", "CUDA_VISIBLE_DEVICES=1"], "drop it and use --gpus"),
    (["--grid", "UCX_TLS=tcp"], "launch.env.UCX_TLS is read by"),
    (["--grid", "HOME=/tmp"], "launch.env.HOME is not read by"),
    (["--grid", "MOONCAKE_PROTOCOL=rdma"], "every value given is the scenario's own setting"),
    (["--grid=--page-size=16", "--server-arg=--page-size 4"], "same server flag is given in --server-arg"),
    (["--grid", f"{POOL}=4", "--baseline-repeats", "2"], "--baseline-repeats 2: give 3 to 20"),
    ([], "give the knobs to vary"),
    (["--grid", "MC_MAX_WR=" + ",".join(map(str, range(1, 10))), "--grid", "MC_SLICE_SIZE=" +
      ",".join(map(str, range(1, 10)))], "81 settings; at most 64"),
    (["--grid", f"{POOL}=4", "--decode-ip", "10.0.0.2"], "--decode-ip: one box runs both servers"),
])
def test_bad_input_is_one_line_and_writes_nothing(tmp_path, args, says):
    done = pdrepro("tune", *args, *_model(tmp_path), "--out", str(tmp_path / "run"))
    assert says in one_line(done)
    assert not (tmp_path / "run").exists()


def test_a_run_folder_of_another_tune_or_none_is_refused(tmp_path):
    run = tmp_path / "run"
    assert pdrepro("tune", "--render", "slurm", "--scenario", "h20-qwen3-235b-1p1d", "--grid", f"{POOL}=4",
                    "--out", str(run)).returncode == 0
    before = tree_hash(run)
    other = pdrepro("tune", "--grid", f"{POOL}=16", *_model(tmp_path), "--out", str(run))
    assert "holds the tune" in one_line(other) and "give another --out" in one_line(other)
    assert tree_hash(run) == before
    assert "no such folder" in one_line(pdrepro("tune", "--judge", str(tmp_path / "nowhere")))
    assert "no tune plan there" in one_line(pdrepro("tune", "--judge", str(tmp_path)))
    assert "give the tune's run folder: --out RUN" in one_line(pdrepro("tune", "--grid", f"{POOL}=4"))


def test_relaxed_ordering_is_a_knob_the_grid_offers_like_any_other(tmp_path):
    # MC_IB_PCI_RELAXED_ORDERING is read by the pinned Mooncake (mode 0 off, its default; 1 on; 2 auto): `pdrepro
    # knobs` lists it, and a tune runs each value as a setting of its own, in the servers' environment.
    listed = pdrepro("knobs", "--reader", "mooncake", "--json")
    (knob,) = [k for k in json.loads(listed.stdout)["knobs"] if k["name"] == "MC_IB_PCI_RELAXED_ORDERING"]
    assert knob["default"] == "0" and knob["rdma_only"] is True
    run = tmp_path / "tune"
    done = pdrepro("tune", "--render", "slurm", "--scenario", "h20-qwen3-235b-1p1d",
                   "--grid", "MC_IB_PCI_RELAXED_ORDERING=1,2", "--out", str(run))
    assert done.returncode == 0, done.stderr
    plan = tuneplan.read(run)
    assert plan is not None
    values = {s.values.get("MC_IB_PCI_RELAXED_ORDERING") for s in plan.settings}
    assert values == {None, "1", "2"}  # the baseline leaves it to the engine's default (0, off)
    for setting in plan.settings:
        for folder in setting.runs:
            (script,) = (run / folder / "job").glob("*.sbatch")
            value = setting.values.get("MC_IB_PCI_RELAXED_ORDERING")
            assert (f"MC_IB_PCI_RELAXED_ORDERING={value}" in script.read_text()) == (value is not None)
