"""The SLURM proof for real: a controller and two compute nodes (Debian's
slurmctld/slurmd/munge in containers) run the smoke's script, rendered by the
SLURM renderer, as one 2-node job; every transfer is checksum-verified and the
job's exit code is checked. With the default runtime each side is a container
its node starts through Docker, as the GPU script starts the servers; with
runtime host the sides run on the nodes. Then the job is cancelled with
scancel while the prefill side runs, and nothing of it may be left behind.

Needs Docker: under CI (CI=true) a missing engine fails these tests."""

import json
import os
import re
import subprocess
import sys

import pytest
from smokeimage import REPO, require_docker, smoke_image

from pdrepro.core.pins import parse_env_file

pytestmark = pytest.mark.docker
SLURM_IMAGE = parse_env_file(REPO / "docker" / "versions.env")["SLURM_IMAGE"]


@pytest.fixture(scope="module")
def slurm_image():
    require_docker()
    smoke_image()
    proc = subprocess.run(["make", "--no-print-directory", "slurm-image", f"PYTHON={sys.executable}"],
                          cwd=REPO, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return SLURM_IMAGE


def _run(out, image, **env):
    return subprocess.run(["bash", str(REPO / "scripts" / "slurm-smoke.sh"), str(out)], cwd=REPO,
                          capture_output=True, text=True, timeout=400,
                          env={**os.environ, "SLURM_IMAGE": image, "PYTHON": sys.executable,
                               "SLURM_SMOKE_ARGS": "--prompt-lens 128,4096,32768 --repeats 2", **env})


def _leftovers(log: str) -> str:
    """Containers of this run's compose project (named in its log) still present."""
    project = re.search(r"project (pdslurm-[a-z0-9-]+)[,)]", log)
    assert project, log[-2000:]
    names = subprocess.run(["docker", "ps", "-a", "--format", "{{.Names}}"], capture_output=True, text=True).stdout
    # The cluster's own containers, and the job's (named after the cluster).
    return "\n".join(n for n in names.splitlines() if n.startswith((project[1] + "-", f"pdrepro-{project[1]}-")))


@pytest.mark.parametrize("runtime", ["docker", "host"])
def test_two_node_job_moves_verified_buffers(tmp_path, slurm_image, runtime):
    out = tmp_path / "proof"
    proc = _run(out, slurm_image, SLURM_SMOKE_RUNTIME=runtime)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-4000:]
    job = re.search(rf"RESULT passed: 2-node job (\d+) on node\[1-2\] \(runtime {runtime}\)", log)
    assert job, log[-3000:]
    assert re.search(rf"job {job[1]}: state COMPLETED, exit code 0:0, nodes node\[1-2\], sbatch exit 0", log)
    placed = re.search(rf"prefill: node1 \(([\d.]+)\); decode: node2 \(([\d.]+)\).* runtime {runtime};", log)
    assert placed and placed[1] != placed[2], "the two sides must run on two nodes with their own addresses"
    raw = out / "shared" / f"slurm-{job[1]}" / "raw"
    initiator = json.loads((raw / "initiator.json").read_text())
    assert initiator["error"] is None and initiator["evidence"]["transport"] == "tcp"
    assert [r["prompt_len"] for r in initiator["rows"]] == [128, 4096, 32768]
    for row in initiator["rows"]:
        for way in ("mooncake", "socket"):
            assert row[way]["verified"] and row[way]["failed_checks"] == 0 and len(row[way]["ms"]) == 2
    # The decode side reached the prefill side at node1's address: the bytes crossed between the nodes.
    assert f"prefill side at {placed[1]}:" in log
    assert json.loads((raw / "target.json").read_text())["finished"] is True
    assert (out / "shared" / f"slurm-{job[1]}" / "logs" / "prefill-0.log").stat().st_size > 0
    assert "every checksum matches" in log
    assert f"starting prefill-0 on node1 ({runtime})" in log
    assert not _leftovers(log), "the cluster or a job container was left behind"


def test_scancel_stops_the_job_and_its_steps(tmp_path, slurm_image):
    out = tmp_path / "cancel"
    proc = _run(out, slurm_image, SLURM_SMOKE_CANCEL="1", SLURM_SMOKE_ARGS="--prompt-lens 32768 --repeats 50 --timeout 600")
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-4000:]
    # The prefill side's container ran on the engine, and scancel removed it.
    assert re.search(r"running: pdrepro-pdslurm-[a-z0-9-]+-\d+-prefill-0", log), log[-3000:]
    assert re.search(r"job \d+: state CANCELLED; left behind: none", log), log[-3000:]
    assert "RESULT cancelled cleanly" in log
    assert not _leftovers(log)
