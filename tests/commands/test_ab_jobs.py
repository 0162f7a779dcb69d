"""`pdrepro ab --render` on a cluster: each arm's job writes its run into RUN/<arm>, where `--judge` reads it.
The sweep's command is read out of each rendered job file (the sbatch script's `repro` step, the Kubernetes
Job's script and mounts) as the scheduler would run it; then a folder laid out as the jobs leave it (the
rendered jobs, and the recorded H200 arms' runs in RUN/<arm>) is judged, both arms, without writing into them."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import yaml
from judgeout import judge_ab, judged
from runkinds import tree_hash
from stackhelp import env

from pdrepro.rundir import armsstate
from pdrepro.rundir.absummary import AbSummary
from pdrepro.rundir.armsstate import ArmRecord, ArmsState
from pdrepro.scenario.model import load_scenario

REPO = Path(__file__).resolve().parents[2]
RECORDED = REPO / "tests" / "recorded" / "h200-ab-mooncake-tcp-vs-nixl-sglang-0.5.15.post1" / "ab"
ARMS = ("mooncake", "nixl")


def _pdrepro(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pdrepro", *args], env=env(), cwd=REPO, capture_output=True,
                          text=True, timeout=120)


def _option(words: list[str], flag: str) -> str:
    (value,) = [words[i + 1] for i, w in enumerate(words[:-1]) if w == flag]
    return value


def _repro_step(script: str) -> list[str]:
    """The words of the sbatch script's `step repro` command, its continuation lines joined as bash would."""
    block = re.search(r"^step repro - \\\n(.*?)\|\|", script, re.S | re.M)
    assert block, "no repro step in the job"
    return shlex.split(block.group(1).replace("\\\n", " "))


def test_each_slurm_job_writes_its_sweep_into_the_arms_folder(tmp_path):
    run = tmp_path / "ab"
    done = _pdrepro("ab", "--render", "slurm", "--scenario", "h20-qwen3-235b-1p1d", "--backends", ",".join(ARMS),
                    "--out", str(run))
    assert done.returncode == 0, done.stderr
    for arm in ARMS:
        (script,) = (run / arm / "job").glob("*.sbatch")
        words = _repro_step(script.read_text())
        assert words[:3] == ["--", "$BUNDLE/.venv/bin/pdrepro", "repro"] and _option(words, "--out") == str(run / arm)
        # The arm's own scenario (its backend), read from the file `ab` wrote, not the shipped one by name.
        scenario = _option(words, "--scenario")
        assert scenario == str(run / "scenarios" / f"{arm}.yaml")
        assert load_scenario(scenario).launch.transfer_backend == arm
        assert f"sbatch {run / arm / 'job'}" in done.stdout
        assert f"pdrepro ab --judge {run}" in (run / arm / "job" / "NEXT.txt").read_text()
    assert done.stdout.rstrip().endswith(f"then: pdrepro ab --judge {run}")


def test_each_k8s_job_writes_its_sweep_into_the_arms_folder(tmp_path):
    ib = tmp_path / "ib_devices.json"
    ib.write_text(json.dumps({str(i): f"mlx5_{i}" for i in range(8)}))
    run = tmp_path / "ab"
    done = _pdrepro("ab", "--render", "k8s", "--scenario", "h20-qwen3-235b-1p1d", "--backends", ",".join(ARMS),
                    "--stack-args", f"--ib-devices {ib}", "--out", str(run))
    assert done.returncode == 0, done.stderr
    namespaces = set()
    for arm in ARMS:
        (job,) = [o for o in yaml.safe_load_all((run / arm / "job" / "50-sweep-job.yaml").read_text())
                  if o and o["kind"] == "Job"]
        namespaces.add(job["metadata"]["namespace"])
        (container,) = job["spec"]["template"]["spec"]["containers"]
        script = container["command"][-1]
        assigned = re.search(r'^run="([^"]*)"$', script, re.M)
        assert assigned and assigned.group(1) == str(run / arm)
        (line,) = [ln for ln in script.splitlines() if " repro " in ln]
        assert shlex.split(line.split(";")[0])[-2:] == ["--out", "$run"]
        # The folder is the shared claim's, mounted at RUN/<arm> in the pod: the run outlives the pod.
        mount = next(m for m in container["volumeMounts"] if m["mountPath"] == str(run / arm))
        volumes = {v["name"]: v for v in job["spec"]["template"]["spec"]["volumes"]}
        assert "persistentVolumeClaim" in volumes[mount["name"]] and mount["subPath"] == f"runs/ab/{arm}"
        assert f"runs/ab/{arm}" in done.stdout and f"copy that folder to {run / arm}" in done.stdout
    # Each arm its own namespace: its claim holds its servers' logs only.
    assert len(namespaces) == len(ARMS)


def test_the_judge_reads_both_arms_where_the_jobs_put_them(tmp_path):
    rendered = tmp_path / "rendered"
    assert _pdrepro("ab", "--render", "slurm", "--scenario", "h20-qwen3-235b-1p1d", "--backends", ",".join(ARMS),
                    "--out", str(rendered)).returncode == 0
    # The layout the jobs leave: RUN/<arm>/job/ (rendered) beside the arm's run; the runs are the recorded H200
    # arms (one box: Mooncake over TCP, NIXL), the arms state as `ab --render` writes it.
    run = tmp_path / "ab"
    recorded = ("mooncake_tcp", "nixl")
    for arm, job_of in zip(recorded, ARMS):
        shutil.copytree(RECORDED / arm, run / arm)
        shutil.copytree(rendered / job_of / "job", run / arm / "job")
    armsstate.write(run, ArmsState(label="ab fixture: mooncake_tcp, nixl", arms=tuple(
        ArmRecord(name=a, backend=a, status="rendered") for a in recorded)))
    before = tree_hash(run)
    done = judge_ab(_pdrepro, run)
    assert done.returncode in (0, 1), done.stderr
    assert tree_hash(run) == before
    summary = AbSummary.model_validate_json((judged(run) / "ab-summary.json").read_text())
    assert [a.name for a in summary.arms] == list(recorded)
    for arm in summary.arms:
        # Judged from its run, as `pdrepro check` judges the folder: not an input error for the job/ beside it.
        assert arm.verdict.input_error is None or "job" not in arm.verdict.input_error
        assert arm.verdict.passed == (_pdrepro("check", str(run / arm.name)).returncode == 0)
    assert all(len(length.arms) == 2 for length in summary.lengths) and summary.lengths
    assert done.returncode == (0 if summary.passed else 1)
