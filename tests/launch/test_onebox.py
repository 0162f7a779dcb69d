"""The one-box check: compose/onebox.yaml, rendered by the real compose CLI
with the env file `pdrepro render --target onebox` writes, runs the plan's
prefill, decode and router on one node, RDMA or TCP."""

from __future__ import annotations

import os
import subprocess

import pytest
from composecli import REPO, config

from pdrepro.cli import main
from pdrepro.launch import plan as launch
from pdrepro.launch.targets import onebox
from pdrepro.scenario.model import load_scenario

SCENARIO = "onebox-qwen25-0.5b"
BASE, RDMA = REPO / onebox.COMPOSE_FILE, REPO / onebox.RDMA_FILE


def _render(tmp_path, *extra) -> tuple:
    model = tmp_path / "Qwen2.5-0.5B-Instruct"
    model.mkdir(exist_ok=True)
    (model / "config.json").write_text("{}")
    out = tmp_path / "onebox"
    assert main(["render", "--target", "onebox", "--scenario", SCENARIO, "--model", str(model), "--out", str(out), *extra]) == 0
    return out / onebox.ENV_FILE, model


def _config(env_file, *files, extra_env=None) -> dict:
    # compose accepts several -f; composecli's helper takes one, so merge here.
    from composecli import compose_cmd

    env = {k: os.environ[k] for k in ("PATH", "HOME") if k in os.environ}
    env.update(extra_env or {})
    args = [a for f in files for a in ("-f", str(f))]
    proc = subprocess.run([*compose_cmd(), *args, "--env-file", str(env_file), "config", "--format", "json"],
                          capture_output=True, text=True, cwd=REPO, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    import json

    return json.loads(proc.stdout)["services"]


def _plan(model, gpus=(0, 1), ip="127.0.0.1") -> launch.LaunchPlan:
    site = launch.Site(prefill_hosts=(ip,), decode_hosts=(ip,), model_path=str(model), dataset_path=launch.DEFAULT_DATASET,
                       ib_devices_file=None, gpus=gpus, image="unused")
    return launch.Plan(load_scenario(SCENARIO), site).launch_plan()


def test_onebox_runs_the_plan(tmp_path):
    env_file, model = _render(tmp_path)
    services = config(BASE, env_file)["services"]
    plan = _plan(model)
    (prefill,), (decode,) = plan.role("prefill")[0].servers, plan.role("decode")[0].servers
    assert services["prefill"]["command"] == list(prefill.argv)
    assert services["decode"]["command"] == list(decode.argv)
    assert services["router"]["command"] == list(plan.router_argv)
    for name, server in (("prefill", prefill), ("decode", decode)):
        env = {k: v for k, v in services[name]["environment"].items() if v is not None and k != "PYTHONUNBUFFERED"}
        assert env == server.env
        assert not services[name].get("privileged") and services[name]["network_mode"] == "host"
        assert "IPC_LOCK" in services[name]["cap_add"]
        assert "--disaggregation-ib-device" not in services[name]["command"]  # Mooncake picks the devices
    # Disjoint GPUs on the one node, and a router that waits for both servers.
    assert (prefill.gpus, decode.gpus) == ((0,), (1,))
    assert set(services["router"]["depends_on"]) == {"prefill", "decode"}
    assert "--prefill http://127.0.0.1:30000 8998" in " ".join(services["router"]["command"])


def test_rdma_when_the_node_has_it_tcp_otherwise(tmp_path):
    env_file, _ = _render(tmp_path)
    tcp = _config(env_file, BASE, extra_env={"MC_FORCE_TCP": "1"})
    rdma = _config(env_file, BASE, RDMA)
    for name in ("prefill", "decode"):
        assert "devices" not in tcp[name]  # nothing to map on a node without RDMA
        assert tcp[name]["environment"]["MC_FORCE_TCP"] == "1"
        assert [d["source"] for d in rdma[name]["devices"]] == ["/dev/infiniband"]
        # Unset, Mooncake uses the HCA it finds.
        assert rdma[name]["environment"].get("MC_FORCE_TCP") is None


def test_gpu_choice_and_address_reach_the_servers(tmp_path):
    env_file, model = _render(tmp_path, "--gpus", "2,3", "--prefill-ip", "192.0.2.30")
    services = config(BASE, env_file)["services"]
    assert services["prefill"]["environment"]["CUDA_VISIBLE_DEVICES"] == "2"
    assert services["decode"]["environment"]["CUDA_VISIBLE_DEVICES"] == "3"
    assert services["decode"]["environment"]["SGLANG_HOST_IP"] == "192.0.2.30"
    assert services["router"]["command"] == list(_plan(model, (2, 3), "192.0.2.30").router_argv)


@pytest.mark.parametrize("args,expected", [
    (["--gpus", "0", "--server-arg=--mem-fraction-static 0.4"], "--mem-fraction-static is given in the extra server args"),
    (["--gpus", "0", "--server-arg", "triton"], "the extra server args start with a flag"),
    (["--force-tcp", "--target", "compose"], "--force-tcp: only the one-box target takes it"),
    (["--prefill-ip", "192.0.2.30", "--decode-ip", "192.0.2.31"], "runs everything on one node"),
    (["--scenario", "h20-qwen3-235b-2p2d"], "runs one prefill and one decode server (1P1D); this one is 2P2D"),
    (["--ib-devices", "/etc/pdrepro/ib_devices.json"], "lets Mooncake pick the RDMA devices itself"),
])
def test_bad_onebox_input_is_one_line(args, expected, tmp_path, capsys):
    out = tmp_path / "o"
    argv = ["render", "--target", "onebox", "--scenario", SCENARIO, "--out", str(out)]
    assert main([*argv, *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and expected in err[0], err
    assert not out.exists()


def test_make_onebox_asks_for_the_model():
    proc = subprocess.run(["make", "-s", "-o", "setup", "onebox", "MODEL="], cwd=REPO,
                          capture_output=True, text=True, timeout=60, env={**os.environ, "MAKEFLAGS": ""})
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines()[0].startswith("make onebox: pass MODEL=")


def test_one_gpu_is_shared_with_a_memory_fraction_each(tmp_path):
    extra = ["--gpus", "0", "--force-tcp", "--server-arg=--attention-backend triton"]
    env_file, model = _render(tmp_path, *extra)
    services = _config(env_file, BASE, REPO / onebox.ONE_GPU_FILE)
    site = launch.Site(prefill_hosts=("127.0.0.1",), decode_hosts=("127.0.0.1",), model_path=str(model),
                       dataset_path=launch.DEFAULT_DATASET, ib_devices_file=None, gpus=(0,), image="unused",
                       extra_server_args=("--attention-backend", "triton"), transfer_backend="mooncake_tcp")
    plan = launch.Plan(load_scenario(SCENARIO), site).launch_plan()
    (prefill,), (decode,) = plan.role("prefill")[0].servers, plan.role("decode")[0].servers
    for name, server in (("prefill", prefill), ("decode", decode)):
        assert services[name]["command"] == list(server.argv)
        assert server.argv[-4:] == ("--mem-fraction-static", "0.3", "--attention-backend", "triton")
        env = {k: v for k, v in services[name]["environment"].items() if v is not None and k != "PYTHONUNBUFFERED"}
        assert env == server.env and env["CUDA_VISIBLE_DEVICES"] == "0" and env["MC_FORCE_TCP"] == "1"
    # Each takes a fraction of the memory free when it starts: decode waits for a healthy prefill.
    assert services["decode"]["depends_on"]["prefill"]["condition"] == "service_healthy"


def test_a_shared_gpu_needs_a_fraction(tmp_path, capsys):
    text = (REPO / "src/pdrepro/scenarios" / f"{SCENARIO}.yaml").read_text()
    scenario = tmp_path / "nofraction.yaml"
    scenario.write_text("\n".join(line for line in text.splitlines() if "shared_gpu_mem_fraction" not in line))
    argv = ["render", "--target", "onebox", "--scenario", str(scenario), "--gpus", "0", "--out", str(tmp_path / "o")]
    assert main(argv) == 2
    assert "the servers share GPU 0" in capsys.readouterr().err
    assert main([*argv, "--mem-fraction", "0.25"]) == 0
    assert "--mem-fraction-static 0.25" in capsys.readouterr().out


@pytest.mark.parametrize("gpus, shared", [("0", True), ("0,1", False)])
def test_make_onebox_adds_the_one_gpu_file_for_one_gpu(gpus, shared):
    proc = subprocess.run(["make", "-n", "-o", "setup", "onebox", "MODEL=/models/x", f"ONEBOX_GPUS={gpus}"], cwd=REPO,
                          capture_output=True, text=True, timeout=60, env={**os.environ, "MAKEFLAGS": ""})
    assert proc.returncode == 0, proc.stderr
    assert (onebox.ONE_GPU_FILE in proc.stdout) == shared
