"""The rendered sbatch script, run by bash against stand-ins for srun,
scontrol, docker and curl on PATH (tests/fakebin.py): where each server lands,
what each container runs, that the exit status is the gates', and that every
container is removed on a normal end and on SIGTERM (what scancel sends).

The real SLURM run is tests/launch/test_slurm_smoke.py."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from fakebin import install
from render_targets import slurm_command
from sysfs_builder import h20_node

from pdrepro.cli import main
from pdrepro.launch import plan as launch
from pdrepro.launch.targets import slurm, slurm_smoke
from pdrepro.scenario.model import load_scenario

NODES = ["gpu-a1", "gpu-a2", "gpu-b1", "gpu-b2"]
IPS = {n: f"10.0.0.{i + 1}" for i, n in enumerate(NODES)}

SRUN = """#!/bin/bash
node="" out=""
while [ $# -gt 0 ]; do
  case $1 in
    --nodelist=*) node=${1#*=} ;;
    --output=*) out=${1#*=} ;;
    --container-*) echo "$1" >> "$FAKE_LOG/pyxis.log" ;;
    --*) ;;
    *) break ;;
  esac
  shift
done
echo "$node $*" >> "$FAKE_LOG/srun.log"
export FAKE_NODE=$node
if [ -n "$out" ]; then exec "$@" > "$out" 2>&1; else exec "$@"; fi
"""
# A container runs until `docker rm -f` removes it, as with the real engine.
DOCKER = """#!/bin/bash
printf '%s\\0' "$FAKE_NODE" "$@" >> "$FAKE_LOG/docker.$$"; printf '\\n' >> "$FAKE_LOG/docker.$$"
case $1 in
  run) prev=""; for a; do [ "$prev" = --name ] && name=$a; prev=$a; done
       echo $$ > "$FAKE_LOG/$name.pid"; trap 'exit 0' TERM; while :; do sleep 0.1; done ;;
  rm) shift; [ "$1" = -f ] && shift
      for n; do [ -f "$FAKE_LOG/$n.pid" ] && kill "$(cat "$FAKE_LOG/$n.pid")" 2>/dev/null; rm -f "$FAKE_LOG/$n.pid"; done ;;
esac
"""


def _bash_tool(bin_dir: Path, name: str, body: str) -> None:
    # bash, not sh: dash drops the exported shell functions (BASH_FUNC_*) that real srun passes on.
    path = install(bin_dir, name, "")
    path.write_text(body)


def _fakes(tmp_path: Path, ready: bool = True, repro_rc: int = 0, second_node_mtu: int = 9000) -> tuple[dict, Path]:
    bin_dir, log = tmp_path / "bin", tmp_path / "log"
    log.mkdir()
    _bash_tool(bin_dir, "srun", SRUN)
    _bash_tool(bin_dir, "docker", DOCKER)
    install(bin_dir, "scontrol", "".join(f"echo {n}\n" for n in NODES))
    install(bin_dir, "getent", "case $2 in\n" + "".join(f"  {n}) echo '{ip} STREAM {n}';;\n" for n, ip in IPS.items())
            + "esac\n")
    install(bin_dir, "curl", f'echo "$*" >> "$FAKE_LOG/curl.log"; exit {0 if ready else 7}\n')
    bundle = tmp_path / "bundle"
    # `pdrepro repro` is the pipeline (tests/commands/test_pipeline.py): its status, the gates' among them, is the job's.
    # `pdrepro doctor` is the real one: on a node (srun sets FAKE_NODE) it reads that node's fake sysfs tree, and the
    # pair check reads the records it wrote.
    for node in NODES:
        h20_node(tmp_path / "sysfs" / node, mtu=second_node_mtu if node == NODES[1] else 9000)
    real = f"{shlex.quote(sys.executable)} -m pdrepro"
    install(bundle / ".venv" / "bin", "pdrepro",
            f'if [ "$1" = doctor ] && [ "$2" = --pair ]; then exec {real} "$@"; fi\n'
            f'if [ "$1" = doctor ]; then exec {real} "$@" --sysfs-root "{tmp_path}/sysfs/$FAKE_NODE"; fi\n'
            f'printf "%s\\n" "$*" >> "$FAKE_LOG/pdrepro.log"; exit {repro_rc}\n')
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "FAKE_LOG": str(log), "SLURM_JOB_ID": "77", "SLURM_CLUSTER_NAME": "lab",
           "SLURM_JOB_NODELIST": "gpu-a[1-2],gpu-b[1-2]", "SLURM_SUBMIT_DIR": str(tmp_path), "BUNDLE": str(bundle),
           "STOP_GRACE_S": "5"}
    return env, log


def _render(tmp_path: Path, scenario: str = "h20-qwen3-235b-2p2d") -> Path:
    assert main(["render", "--target", "slurm", "--scenario", scenario, "--out", str(tmp_path / "deploy")]) == 0
    return tmp_path / "deploy" / f"{scenario}.sbatch"


def _docker_calls(log: Path) -> list[list[str]]:
    calls = []
    for f in sorted(log.glob("docker.*")):
        calls += [line.split("\0") for line in f.read_text().split("\0\n") if line]
    return calls


def _plan(name: str):
    scenario = load_scenario(name)
    t = scenario.topology
    hosts = ([IPS[n] for n in NODES[:t.prefill.nodes]], [IPS[n] for n in NODES[t.prefill.nodes:][:t.decode.nodes]])
    site = launch.Site(prefill_hosts=tuple(hosts[0]), decode_hosts=tuple(hosts[1]),
                       model_path=f"{launch.DEFAULT_MODEL_ROOT}/{scenario.model.name}", dataset_path=launch.DEFAULT_DATASET,
                       ib_devices_file=launch.DEFAULT_IB_DEVICES, gpus=tuple(range(8)), image="pdrepro-gpu:0.1.0")
    return launch.Plan(scenario, site).launch_plan()


def test_2p2d_job_places_every_server_and_cleans_up(tmp_path):
    script = _render(tmp_path)
    env, log = _fakes(tmp_path, repro_rc=1)
    proc = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=120)
    # The gates' failure is the job's: a scheduler sees the reproduction fail.
    assert proc.returncode == 1, proc.stdout + proc.stderr
    runs = {c[c.index("--name") + 1]: c for c in _docker_calls(log) if c[1] == "run"}
    plan = _plan("h20-qwen3-235b-2p2d")
    assert sorted(runs) == sorted([*(f"pdrepro-lab-77-{s.name}" for s in plan.servers), "pdrepro-lab-77-router"])
    placed = {name.removeprefix("pdrepro-lab-77-"): call[0] for name, call in runs.items()}
    assert placed == {"prefill-0": "gpu-a1", "prefill-1": "gpu-a2", "decode-0": "gpu-b1", "decode-1": "gpu-b2",
                      "router": "gpu-b1"}
    for server in plan.servers:
        call = runs[f"pdrepro-lab-77-{server.name}"]
        image = call.index("pdrepro-gpu:0.1.0")
        assert call[image + 1:] == list(server.argv), server.name
        envs = dict(call[i + 1].split("=", 1) for i, w in enumerate(call[:image]) if w == "-e")
        assert envs == server.env, server.name
        for flag in ("--gpus", "--ipc", "--device", "--ulimit"):
            assert flag in call[:image], (server.name, flag)
        assert call[call.index("--ulimit") + 1] == "memlock=-1"
    router = runs["pdrepro-lab-77-router"]
    assert router[router.index("pdrepro-gpu:0.1.0") + 1:] == list(plan.router_argv)
    assert "--gpus" not in router
    (repro,) = [line.split() for line in (log / "pdrepro.log").read_text().splitlines()]
    assert repro[0] == "repro"
    assert repro[repro.index("--router") + 1] == "http://10.0.0.3:8000"
    assert repro[repro.index("--prefill") + 1] == "http://10.0.0.1:30000"
    assert "http://10.0.0.3:8000/readiness" in (log / "curl.log").read_text()
    job_dir = tmp_path / "runs" / "slurm-77"
    assert os.readlink(job_dir / "logs" / "prefill.log") == "prefill-0.log"
    assert repro[repro.index("--gates") + 1] == f"{env['BUNDLE']}/repro/"
    assert repro[repro.index("--pytest") + 1] == f"{env['BUNDLE']}/.venv/bin/pytest"
    assert repro[repro.index("--out") + 1] == f"{job_dir}/run"
    # Every container was removed, and nothing of the job is left running.
    removed = {n for c in _docker_calls(log) if c[1] == "rm" for n in c[3:]}
    assert set(runs) <= removed
    assert not list(log.glob("*.pid"))


def test_sigterm_while_loading_removes_every_container(tmp_path):
    script = _render(tmp_path, "h20-qwen3-235b-1p1d")
    env, log = _fakes(tmp_path, ready=False)
    proc = subprocess.Popen(["bash", str(script)], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 60
    while len(list(log.glob("*.pid"))) < 3:
        assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()[0]
        time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 143, out
    assert "stopping 3 server step(s)" in out
    assert not list(log.glob("*.pid")), "a container outlived the job"
    assert not (log / "pdrepro.log").exists(), "the sweep ran although the router never became ready"


def test_too_small_allocation_is_one_line(tmp_path):
    script = _render(tmp_path)
    env, log = _fakes(tmp_path)
    (tmp_path / "bin" / "scontrol").write_text("#!/bin/sh\necho gpu-a1\necho gpu-a2\n")
    proc = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "the allocation has 2 node(s); this scenario needs 4 (2 prefill, 2 decode): sbatch --nodes=4" in proc.stderr
    assert not list(log.glob("docker.*"))


def test_pyxis_runtime_gives_the_image_and_mounts_to_srun(tmp_path):
    script = _render(tmp_path, "h20-qwen3-235b-1p1d")
    env, log = _fakes(tmp_path)
    env["RUNTIME"] = "pyxis"
    install(tmp_path / "bin", "env", 'echo "$FAKE_NODE $*" >> "$FAKE_LOG/env.log"\n')
    proc = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    pyxis = (log / "pyxis.log").read_text().splitlines()
    assert "--container-image=pdrepro-gpu:0.1.0" in pyxis
    mounts = next(x for x in pyxis if x.startswith("--container-mounts="))
    assert "/models/Qwen3-235B-A22B-Instruct-2507:/models/Qwen3-235B-A22B-Instruct-2507:ro" in mounts
    assert not list(log.glob("docker.*"))


def test_smoke_script_has_the_gpu_scripts_shape(tmp_path):
    from pdrepro.scenario.smokeplan import make_plan

    scenario = load_scenario("smoke-tcp")
    smoke = slurm.render(slurm_smoke.smoke_job(scenario, make_plan(scenario, [128], repeats=1)))
    gpu = _render(tmp_path, "h20-qwen3-235b-1p1d").read_text()
    sections = [line for line in gpu.splitlines() if line.startswith("# ---- ")]
    # The GPU job alone records its two nodes and checks the pair before its servers load (the smoke has no GPU).
    pair = "# ---- Node records and the pair check, before any server starts ----"
    assert pair in sections and pair not in smoke
    assert [s for s in sections if s != pair] == [line for line in smoke.splitlines() if line.startswith("# ---- ")]
    block = gpu.split("# ---- How steps start")[1].split("# ---- Placement")[0]
    assert len(block) > 2000 and block in smoke
    env, argv = slurm_command(smoke, "prefill-0", {"PREFILL_IPS[0]": "10.0.0.1"})
    assert argv == ["python3", "-m", "pdrepro.smoke.agent", "target"] and env["SMOKE_HOST_IP"] == "10.0.0.1"
    assert json.loads(env["SMOKE_PLAN"])["rows"] == [{"prompt_len": 128, "kv_bytes": 524288}]
    for text in (smoke, gpu):
        assert subprocess.run(["bash", "-n"], input=text, text=True).returncode == 0


def _raw(tmp_path: Path, verified: bool) -> Path:
    way = {"ms": [1.0, 1.1], "verified": verified, "failed_checks": 0 if verified else 1}
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "initiator.json").write_text(json.dumps({
        "error": None, "evidence": {"transport": "tcp"}, "target_evidence": {"transport": "tcp"},
        "rows": [{"prompt_len": 128, "kv_bytes": 524288, "mooncake": way, "socket": dict(way, verified=True, failed_checks=0)}]}))
    (raw / "target.json").write_text(json.dumps({"finished": True}))
    return raw


@pytest.mark.parametrize("verified,code", [(True, 0), (False, 1)])
def test_smoke_gate_fails_on_a_checksum_mismatch(tmp_path, capsys, verified, code):
    assert slurm_smoke.main(["check", str(_raw(tmp_path, verified))]) == code
    assert ("checksums match" if verified else "checksums DIFFER") in capsys.readouterr().out


def test_smoke_gate_without_results_is_one_line(tmp_path, capsys):
    assert slurm_smoke.main(["check", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "initiator.json: missing" in err


def test_word_quotes_only_script_variables():
    assert slurm.word("http://${PREFILL_IPS[0]}:30000") == '"http://${PREFILL_IPS[0]}:30000"'
    assert slurm.word("$HOME/x") == "'$HOME/x'"
    assert shlex.split(slurm.word("a b")) == ["a b"]


def test_servers_per_node_share_their_node_with_own_gpus_and_ports(tmp_path):
    data = load_scenario("h20-qwen3-235b-1p1d").to_dict()
    data["name"] = "two-per-node"
    data["topology"] = {"prefill": {"nodes": 1, "servers_per_node": 2}, "decode": {"nodes": 1, "servers_per_node": 2}}
    data["launch"]["ports"] = {"prefill": 30000, "decode": 30010, "bootstrap": 8998, "router": 8000}
    path = tmp_path / "two-per-node.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    out = tmp_path / "deploy"
    assert main(["render", "--target", "slurm", "--scenario", str(path), "--out", str(out)]) == 0
    text = (out / "two-per-node.sbatch").read_text()
    assert "#SBATCH --nodes=2\n" in text and "#SBATCH --gres=gpu:16\n" in text
    env, log = _fakes(tmp_path)
    proc = subprocess.run(["bash", str(out / "two-per-node.sbatch")], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    runs = {c[c.index("--name") + 1].removeprefix("pdrepro-lab-77-"): c for c in _docker_calls(log) if c[1] == "run"}
    assert {name: c[0] for name, c in runs.items()} == {
        "prefill-0-0": "gpu-a1", "prefill-0-1": "gpu-a1", "decode-0-0": "gpu-a2", "decode-0-1": "gpu-a2", "router": "gpu-a2"}
    gpus = {name: next(w for w in c if w.startswith("CUDA_VISIBLE_DEVICES=")) for name, c in runs.items() if name != "router"}
    assert gpus["prefill-0-0"].endswith("=0,1,2,3,4,5,6,7") and gpus["prefill-0-1"].endswith("=8,9,10,11,12,13,14,15")
    assert "--disaggregation-bootstrap-port 8999" in " ".join(runs["prefill-0-1"])
    router = " ".join(runs["router"])
    assert "--prefill http://10.0.0.1:30001 8999" in router and "--decode http://10.0.0.2:30011" in router


def test_without_an_allocation_the_script_says_so(tmp_path):
    script = _render(tmp_path, "h20-qwen3-235b-1p1d")
    proc = subprocess.run(["bash", str(script)], env={"PATH": "/usr/bin:/bin"}, capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2
    assert proc.stderr == "no SLURM allocation here: submit this script with sbatch\n"


def test_rendered_scripts_pass_shellcheck(tmp_path):
    from venvtools import shellcheck

    from pdrepro.scenario.smokeplan import make_plan

    scenario = load_scenario("smoke-tcp")
    smoke = tmp_path / "smoke.sbatch"
    smoke.write_text(slurm.render(slurm_smoke.smoke_job(scenario, make_plan(scenario, [128], repeats=1))))
    # Generated output only: the repository's own scripts are checked in tests/test_lint.py.
    scripts = [_render(tmp_path, "h20-qwen3-235b-2p2d"), smoke]
    # Warnings and errors; the runtime's functions run through traps and srun, which shellcheck cannot follow.
    proc = subprocess.run([shellcheck(), "--severity=warning", *map(str, scripts)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("name", ["qwen,3", "qwen:3"])
def test_a_path_the_job_cannot_mount_is_refused_on_one_line(tmp_path, capsys, name):
    out = tmp_path / "deploy"
    folder = tmp_path / name  # a model folder as render checks it (config.json), named as no mount list carries
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    model = str(folder)
    assert main(["render", "--target", "slurm", "--scenario", "h20-qwen3-235b-1p1d", "--out", str(out),
                 "--model", model]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and model in err and "cannot bind-mount" in err, err
    assert not out.exists() or not any(out.rglob("*.sbatch"))


def test_nodes_that_disagree_stop_the_job_before_any_server_starts(tmp_path):
    script = _render(tmp_path, "h20-qwen3-235b-1p1d")
    env, log = _fakes(tmp_path, second_node_mtu=1500)  # 1P1D: the second node serves decode
    proc = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "MISMATCH active MTU: prefill 4096, decode 1024" in proc.stdout
    assert "the pair check refused the launch (exit 1)" in proc.stdout
    nodes = tmp_path / "runs" / "slurm-77" / "nodes"
    assert json.loads((nodes / "prefill.json").read_text())["role"] == "prefill"
    assert json.loads((nodes / "decode.json").read_text())["role"] == "decode"
    assert not _docker_calls(log), "a server started although the nodes disagree"
    assert not (log / "pdrepro.log").exists()


def test_matching_nodes_hand_their_records_to_the_run(tmp_path):
    script = _render(tmp_path, "h20-qwen3-235b-1p1d")
    env, log = _fakes(tmp_path)
    proc = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 mismatch(es)" in proc.stdout
    (repro,) = [line.split() for line in (log / "pdrepro.log").read_text().splitlines()]
    job = tmp_path / "runs" / "slurm-77"
    given = [repro[i + 1] for i, w in enumerate(repro) if w == "--node-record"]
    assert given == [f"{job}/nodes/prefill.json", f"{job}/nodes/decode.json"]
    # Each record was written on its own node (the srun log names the node the doctor ran on).
    srun = (log / "srun.log").read_text().splitlines()
    assert any(line.startswith("gpu-a1 ") and "doctor --role prefill" in line for line in srun)
    assert any(line.startswith("gpu-a2 ") and "doctor --role decode" in line for line in srun)
