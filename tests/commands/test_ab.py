"""`pdrepro ab` as a user runs it: two backends' arms against the stand-in servers (real stack up and down, the
sweep stage standing in: tests/armsscript.py), judged side by side into RUN/ab-summary.json and RUN/report.md;
the recorded H200 arms judged without a byte of their folders changed, each arm's verdict the one `pdrepro
check` gives it; one job per arm rendered for a cluster, nothing started; bad input one line, exit 2."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import jsonschema
import pytest
from judgeout import judge_ab, judged
from runkinds import tree_hash
from stackhelp import env, make_site, one_line, pdrepro, stop_left

from pdrepro.backends.registry import backend
from pdrepro.launch.stack import ownership, record
from pdrepro.rundir import armsstate
from pdrepro.rundir.absummary import AbSummary
from pdrepro.scenario import schemagen

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "tests" / "armsscript.py"
RECORDED = REPO / "tests" / "recorded" / "h200-onebox-nixl-and-mooncake-sglang-0.5.15.post1"
# The recorded folders as `pdrepro ab` names arms: after the backend each ran (the run predates `ab`).
RECORDED_ARMS = {"mooncake-tcp": "mooncake_tcp", "nixl": "nixl"}


def _ab(*args: str, fake: dict[str, str] | None = None, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), "cli", "ab", *args], env=env(**(fake or {})), cwd=REPO,
                          capture_output=True, text=True, timeout=timeout)




@pytest.fixture
def site(tmp_path):
    made = make_site(tmp_path)
    yield made
    stop_left(made["run"] / arm for arm in ("mooncake_tcp", "nixl"))


def test_two_backends_run_one_after_the_other_and_are_set_side_by_side(site):
    dataset = site["tmp"] / "sharegpt.json"
    dataset.write_text("[]")
    options = [o for o in site["options"] if o != "--force-tcp"]
    done = _ab(*options, "--backends", "mooncake_tcp,nixl", "--dataset", str(dataset), "--stack-args",
               "--poll 0.1 --grace 5", "--out", str(site["run"]), fake={"ARMS_FAKE_TTFT": "nixl:2"})
    assert done.returncode in (0, 1), done.stdout + done.stderr
    run = site["run"]
    state = armsstate.read(run)
    assert state is not None and [(a.name, a.backend, a.status) for a in state.arms] == [
        ("mooncake_tcp", "mooncake_tcp", "done"), ("nixl", "nixl", "done")]
    for arm in ("mooncake_tcp", "nixl"):
        rec = record.read(run / arm)
        assert rec.stopped_at is not None and ownership.marked(rec.stack_id) == []
        argv = rec.processes[0].argv
        # Each arm's servers ran its own backend (the launch plan's flag, as the engine module writes it).
        assert argv[argv.index("--disaggregation-transfer-backend") + 1] == ("mooncake" if arm == "mooncake_tcp"
                                                                            else "nixl")
    assert record.read(run / "mooncake_tcp").processes[0].env.get("MC_FORCE_TCP") == "1"
    assert "MC_FORCE_TCP" not in record.read(run / "nixl").processes[0].env

    summary = AbSummary.model_validate_json((run / "ab-summary.json").read_text())
    assert [a.name for a in summary.arms] == ["mooncake_tcp", "nixl"]
    assert [length.prompt_len for length in summary.lengths] == [128, 1024, 4096, 16384]
    for length in summary.lengths:
        base, other = length.arms
        assert base.kv_bytes and base.kv_bytes == other.kv_bytes  # one model, one KV size per length
        assert base.requests == other.requests == base.expected_requests
        (ratio,) = length.ratios
        assert (ratio.arm, ratio.against) == ("nixl", "mooncake_tcp")
        assert ratio.mean == pytest.approx(2.0, rel=1e-3) and ratio.median == pytest.approx(2.0, rel=1e-3)
    for arm in summary.arms:
        assert arm.timing == backend(arm.backend or "").timing and arm.backend_label == backend(arm.backend or "").label
        # Each arm's verdict is the one `pdrepro check` draws from the arm's own folder.
        assert arm.verdict.passed == (pdrepro("check", str(run / arm.name)).returncode == 0)
        assert arm.verdict.all_completed is True and arm.verdict.kv_sizes_match is True
        assert arm.verdict.ttft_covers_transfer is True and arm.verdict.transport
    assert done.returncode == (0 if summary.passed else 1)
    report = (run / "report.md").read_text()
    # The title says "A/B" once: the label's own "ab" word (which keeps an A/B's folder apart) is left out of it.
    assert summary.label.startswith("ab onebox-qwen25-0.5b: mooncake_tcp, nixl")
    assert report.splitlines()[0].startswith("# A/B: onebox-qwen25-0.5b: mooncake_tcp, nixl (arm scenarios ")
    for arm in summary.arms:
        assert f"measures: {arm.timing}" in report
    assert "| nixl / mooncake_tcp | 2.00x | 2.00x |" in report

    # Judging again writes nothing into the A/B and gives the summary and the report the run wrote.
    before = tree_hash(run)
    again = judge_ab(pdrepro, run)
    assert again.returncode == done.returncode and tree_hash(run) == before, again.stderr
    assert AbSummary.model_validate_json((judged(run) / "ab-summary.json").read_text()) == summary
    assert (judged(run) / "report.md").read_text().rstrip("\n") == report.rstrip("\n")
    # A report a person edited is never written over: the same command is refused by name before an arm starts.
    edited = report + "\nmy notes on this A/B\n"
    (run / "report.md").write_text(edited)
    refused = _ab(*options, "--backends", "mooncake_tcp,nixl", "--dataset", str(dataset), "--stack-args",
                  "--poll 0.1 --grace 5", "--out", str(run), fake={"ARMS_FAKE_TTFT": "nixl:2"})
    assert refused.returncode == 2 and "Traceback" not in refused.stderr, refused.stdout + refused.stderr
    assert f"{run / 'report.md'}: not written by pdrepro ab" in refused.stderr and "== arm" not in refused.stdout
    assert (run / "report.md").read_text() == edited


def _python_on_path(tmp: Path) -> str:
    """The bench client's argv starts with `python` (the image's): here, this interpreter."""
    bin_dir = tmp / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "python").symlink_to(sys.executable)
    return f"{bin_dir}{os.pathsep}{os.environ['PATH']}"


def test_ab_runs_the_real_sweep_on_each_arm_and_judges_them_as_check_does(site):
    dataset = site["tmp"] / "sharegpt.json"
    dataset.write_text("[]")
    options = [o for o in site["options"] if o != "--force-tcp"]
    run = site["run"]
    done = subprocess.run(
        [sys.executable, "-m", "pdrepro", "ab", *options, "--backends", "mooncake_tcp,nixl", "--dataset", str(dataset),
         "--arm-env", "nixl:UCX_TLS=tcp,cuda_copy", "--arm-env", "nixl:UCX_LOG_LEVEL=info",
         "--stack-args", "--poll 0.1 --grace 5", "--sweep-args", "--length-timeout 60 --wait-timeout 30",
         "--out", str(run)], env=env(PATH=_python_on_path(site["tmp"])), cwd=REPO, capture_output=True, text=True,
        timeout=400)
    assert done.returncode in (0, 1, 2) and "Traceback" not in done.stderr, done.stdout + done.stderr
    # Each arm ran the scenario as its backend runs it: its own variables, none of the other's.
    moon, nixl = (record.read(run / arm).processes[0] for arm in ("mooncake_tcp", "nixl"))
    assert moon.env.get("MC_FORCE_TCP") == "1" and "UCX_TLS" not in moon.env
    assert nixl.env.get("UCX_TLS") == "tcp,cuda_copy" and "MOONCAKE_PROTOCOL" not in nixl.env
    for arm in ("mooncake_tcp", "nixl"):
        rec = record.read(run / arm)
        assert rec.stopped_at is not None and ownership.marked(rec.stack_id) == []
    written = json.loads((run / "ab-summary.json").read_text())
    schema = json.loads((schemagen.shipped_dir() / schemagen.file_name("ab-summary")).read_text())
    jsonschema.Draft202012Validator(schema).validate(written)  # the shipped schema holds what ab writes
    summary = AbSummary.model_validate(written)
    checked = {arm.name: pdrepro("check", str(run / arm.name)).returncode for arm in summary.arms}
    for arm in summary.arms:
        assert arm.verdict.passed == (checked[arm.name] == 0), (arm.name, arm.verdict)
    # The base arm measured every length of the scenario, from its own bench files.
    assert [length.prompt_len for length in summary.lengths] == [128, 1024, 4096, 16384]
    for length in summary.lengths:
        base, other = length.arms
        client = json.loads((run / "mooncake_tcp" / "bench" / f"result-{length.prompt_len}.jsonl").read_text()
                            .splitlines()[-1])
        assert base.ttft_ms_mean == pytest.approx(client["mean_ttft_ms"], rel=1e-6)
        if other.ttft_ms_mean is not None:
            assert length.ratios[0].mean == pytest.approx(other.ttft_ms_mean / (base.ttft_ms_mean or 1), abs=1e-4)
    # The stand-ins speak both backends' lines: both arms pass, each with the transport its servers stated.
    assert done.returncode == 0 and summary.passed, done.stdout + done.stderr
    for arm in summary.arms:
        assert (arm.verdict.transport or "").startswith("tcp;"), arm.verdict.transport


def _ab_argv(site: dict, dataset: Path) -> list[str]:
    options = [o for o in site["options"] if o != "--force-tcp"]
    return [sys.executable, "-m", "pdrepro", "ab", *options, "--backends", "mooncake_tcp,nixl", "--dataset",
            str(dataset), "--arm-env", "nixl:UCX_TLS=tcp,cuda_copy", "--arm-env", "nixl:UCX_LOG_LEVEL=info",
            "--stack-args", "--poll 0.1 --grace 5", "--sweep-args", "--length-timeout 60 --wait-timeout 30",
            "--out", str(site["run"])]


def _done_lengths(run: Path) -> list[str]:
    try:
        state = json.loads((run / "sweep-state.json").read_text())
    except (OSError, ValueError):
        return []
    return [k for k, v in state.get("lengths", {}).items() if v.get("status") == "done"]


def test_a_sigterm_mid_sweep_resumes_at_the_arm_and_the_length_it_reached(site):
    dataset = site["tmp"] / "sharegpt.json"
    dataset.write_text("[]")
    run, env_ = site["run"], env(PATH=_python_on_path(site["tmp"]))
    proc = subprocess.Popen(_ab_argv(site, dataset), env=env_, cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 240
        while not _done_lengths(run / "nixl") and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proc.poll() is None, "the A/B ended before the second arm measured a length"
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 143 and "Traceback" not in err, out + err
    rec = record.read(run / "nixl")
    assert rec.stopped_at is not None and ownership.marked(rec.stack_id) == []
    state = armsstate.read(run)
    assert state is not None and [(a.status, a.exit) for a in state.arms] == [("done", 0), ("stopped", 143)]
    assert not (run / "ab-summary.json").exists(), "a stopped A/B was judged"
    kept = {L: (run / "nixl" / "bench" / f"result-{L}.jsonl").read_bytes() for L in _done_lengths(run / "nixl")}
    assert kept

    again = subprocess.run(_ab_argv(site, dataset), env=env_, cwd=REPO, capture_output=True, text=True, timeout=400)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "== arm mooncake_tcp: done already, skipped" in again.stdout
    # The sweep's own resume kept the lengths it had measured: the same bytes, not measured again.
    assert {L: (run / "nixl" / "bench" / f"result-{L}.jsonl").read_bytes() for L in kept} == kept
    assert sorted(map(int, _done_lengths(run / "nixl"))) == [128, 1024, 4096, 16384]


def test_the_recorded_arms_are_judged_without_writing_into_them(tmp_path):
    run = tmp_path / "ab"
    for folder, arm in RECORDED_ARMS.items():
        shutil.copytree(RECORDED / folder, run / arm)
    before = tree_hash(run)
    done = judge_ab(pdrepro, run, "--backends", "mooncake_tcp,nixl")
    assert done.returncode in (0, 1), done.stdout + done.stderr
    assert tree_hash(run) == before
    summary = AbSummary.model_validate_json((judged(run) / "ab-summary.json").read_text())
    for arm in summary.arms:
        assert arm.verdict.passed == (pdrepro("check", str(run / arm.name)).returncode == 0)
    for length in summary.lengths:
        for figures in length.arms:
            lines = (run / figures.arm / "bench" / f"result-{length.prompt_len}.jsonl").read_text().splitlines()
            client = json.loads(lines[-1])
            assert figures.ttft_ms_mean == pytest.approx(client["mean_ttft_ms"], rel=1e-6)
            assert figures.ttft_ms_median == pytest.approx(client["median_ttft_ms"], rel=1e-6)
        base, other = length.arms
        assert length.ratios[0].mean == pytest.approx((other.ttft_ms_mean or 0) / (base.ttft_ms_mean or 1), abs=1e-4)
    assert done.returncode == (0 if summary.passed else 1)


def test_render_writes_one_job_per_arm_and_starts_nothing(tmp_path):
    run = tmp_path / "ab"
    done = pdrepro("ab", "--render", "slurm", "--scenario", "h20-qwen3-235b-1p1d", "--backends", "mooncake,nixl",
                    "--out", str(run))
    assert done.returncode == 0, done.stderr
    for arm in ("mooncake", "nixl"):
        (script,) = (run / arm / "job").glob("*.sbatch")
        assert re.search(rf"--disaggregation-transfer-backend {arm}\s", script.read_text())
        assert not (run / arm / "stack.json").exists() and not (run / arm / "bench").exists()
    state = armsstate.read(run)
    assert state is not None and [(a.name, a.status) for a in state.arms] == [("mooncake", "rendered"),
                                                                           ("nixl", "rendered")]
    # Before the jobs ran, judging names what is missing per arm and fails.
    before = tree_hash(run)
    assert judge_ab(pdrepro, run).returncode == 1
    assert tree_hash(run) == before
    summary = AbSummary.model_validate_json((judged(run) / "ab-summary.json").read_text())
    assert all(not a.verdict.passed and a.verdict.input_error for a in summary.arms)


@pytest.mark.parametrize("args, says", [
    (["--backends", "mooncake_tcp,carrier-pigeon"], "transfer backend 'carrier-pigeon' is not one the bundle knows"),
    (["--backends", "nixl"], "give two or more different backends"),
    (["--backends", "nixl,nixl"], "give two or more different backends"),
    (["--backends", "mooncake_tcp,nixl", "--decode-ip", "10.0.0.2"], "--decode-ip: one box runs both servers"),
    (["--backends", "mooncake_tcp,nixl"], "give --model MODEL_DIR and --dataset SHAREGPT_JSON"),
    (["--backends", "mooncake_tcp,nixl", "--sweep-args", "'unclosed"], "--sweep-args"),
])
def test_bad_input_isone_line(tmp_path, args, says):
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    extra = ["--model", str(model), "--dataset", str(model / "config.json")] if "--sweep-args" in args else []
    done = pdrepro("ab", *args, *extra, "--out", str(tmp_path / "run"))
    assert says in one_line(done)
    assert not (tmp_path / "run" / "arms-state.json").exists()


def test_a_scenario_that_names_its_arms_needs_no_backends(tmp_path):
    shipped = REPO / "src/pdrepro/scenarios/h20-qwen3-235b-1p1d.yaml"
    text = shipped.read_text()
    assert "\nlaunch:" in text
    scenario = tmp_path / "ab-scenario.yaml"
    scenario.write_text(text.replace("\nlaunch:", "\nab: {backends: [nixl, mooncake]}\nlaunch:", 1))
    run = tmp_path / "ab"
    done = pdrepro("ab", "--render", "slurm", "--scenario", str(scenario), "--out", str(run))
    assert done.returncode == 0, done.stderr
    state = armsstate.read(run)
    assert state is not None and [a.backend for a in state.arms] == ["nixl", "mooncake"]
    twice = tmp_path / "twice.yaml"
    twice.write_text(text.replace("\nlaunch:", "\nab: {backends: [nixl, nixl]}\nlaunch:", 1))
    refused = pdrepro("ab", "--scenario", str(twice), "--out", str(tmp_path / "other"))
    assert "ab.backends names a backend twice" in one_line(refused)


@pytest.mark.parametrize("arm_env, says", [
    ("nixl", "give BACKEND:KEY=VALUE"),
    ("pigeon:UCX_TLS=tcp", "give BACKEND:KEY=VALUE"),
    ("mooncake_tcp:UCX_TLS=tcp", "launch.env.UCX_TLS is read by"),
])
def test_an_arm_variable_its_backend_does_not_read_is_refused(tmp_path, arm_env, says):
    done = pdrepro("ab", "--backends", "mooncake_tcp,nixl", "--arm-env", arm_env, "--out", str(tmp_path / "run"))
    assert says in one_line(done)
    assert not (tmp_path / "run").exists()
