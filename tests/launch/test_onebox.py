"""The one-box check: the onebox.yaml `pdrepro render --target onebox` writes, read back by the real
compose CLI with its env file, runs the plan's prefill, decode and router on one node, RDMA or TCP."""

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


def _render(tmp_path, *extra) -> tuple:
    model = tmp_path / "Qwen2.5-0.5B-Instruct"
    model.mkdir(parents=True, exist_ok=True)
    (model / "config.json").write_text("{}")
    out = tmp_path / "onebox"
    assert main(["render", "--target", "onebox", "--scenario", SCENARIO, "--model", str(model), "--out", str(out), *extra]) == 0
    return out, model


def _config(out, *files, extra_env=None) -> dict:
    return config([out / f for f in files], out / onebox.ENV_FILE, extra_env)["services"]


def _plan(model, gpus=(0, 1), ip="127.0.0.1") -> launch.LaunchPlan:
    site = launch.Site(prefill_hosts=(ip,), decode_hosts=(ip,), model_path=str(model), dataset_path=launch.DEFAULT_DATASET,
                       ib_devices_file=None, gpus=gpus, image="unused")
    return launch.Plan(load_scenario(SCENARIO), site).launch_plan()


def test_onebox_runs_the_plan(tmp_path):
    out, model = _render(tmp_path)
    services = _config(out, onebox.COMPOSE_FILE)
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
        assert "--disaggregation-ib-device" not in services[name]["command"]  # the backend picks the devices
        assert services[name]["healthcheck"]["test"][-1].endswith(f":{server.port}/health_generate', timeout=60)")
        assert f"/logs/{name}.log" in services[name]["entrypoint"][-1]
    # Disjoint GPUs on the one node, and a router that waits for both servers.
    assert (prefill.gpus, decode.gpus) == ((0,), (1,))
    assert set(services["router"]["depends_on"]) == {"prefill", "decode"}
    assert "depends_on" not in services["decode"]  # two GPUs: both load at once
    assert "--prefill http://127.0.0.1:30000 8998" in " ".join(services["router"]["command"])


def test_rdma_when_the_node_has_it_tcp_otherwise(tmp_path):
    out, _ = _render(tmp_path)
    tcp_out, _ = _render(tmp_path / "tcp", "--force-tcp")
    rdma = _config(out, onebox.COMPOSE_FILE, onebox.RDMA_FILE)
    plain = _config(out, onebox.COMPOSE_FILE)
    tcp = _config(tcp_out, onebox.COMPOSE_FILE)
    for name in ("prefill", "decode"):
        assert "devices" not in plain[name] and "devices" not in tcp[name]  # nothing to map without RDMA
        assert tcp[name]["environment"]["MC_FORCE_TCP"] == "1"
        assert [d["source"] for d in rdma[name]["devices"]] == ["/dev/infiniband"]
        # Unset, Mooncake uses the HCA it finds.
        assert "MC_FORCE_TCP" not in rdma[name]["environment"]


def test_gpu_choice_and_address_reach_the_servers(tmp_path):
    out, model = _render(tmp_path, "--gpus", "2,3", "--prefill-ip", "192.0.2.30")
    services = _config(out, onebox.COMPOSE_FILE)
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
    (["--ib-devices", "/etc/pdrepro/ib_devices.json"], "lets the transfer backend pick the RDMA devices itself"),
])
def test_bad_onebox_input_is_one_line(args, expected, tmp_path, capsys):
    out = tmp_path / "o"
    argv = ["render", "--target", "onebox", "--scenario", SCENARIO, "--out", str(out)]
    assert main([*argv, *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and expected in err[0], err
    assert not out.exists()


def _make(*args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "-s", "-o", "setup", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "MAKEFLAGS": ""})


def test_make_onebox_asks_for_the_model():
    proc = _make("onebox", "MODEL=", timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines()[0].startswith("make onebox: pass MODEL=")


def test_one_gpu_is_shared_with_a_memory_fraction_each(tmp_path):
    extra = ["--gpus", "0", "--force-tcp", "--server-arg=--attention-backend triton"]
    out, model = _render(tmp_path, *extra)
    services = _config(out, onebox.COMPOSE_FILE)
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


@pytest.mark.parametrize("gpus", ["0", "0,1"])
def test_make_onebox_starts_what_it_rendered(gpus, tmp_path):
    deploy = tmp_path / "ob"
    proc = subprocess.run(["make", "-n", "-o", "setup", "onebox", "MODEL=/models/x", f"ONEBOX_GPUS={gpus}",
                           f"ONEBOX_DEPLOY={deploy}"], cwd=REPO,
                          capture_output=True, text=True, timeout=60, env={**os.environ, "MAKEFLAGS": ""})
    assert proc.returncode == 0, proc.stderr
    # One render (the GPU choice and start order are in the file it writes), then compose on that file.
    assert f"--gpus {gpus} $tcp --out {deploy}" in proc.stdout
    assert f'cmd="docker compose -f {deploy}/onebox.yaml"' in proc.stdout or f"-f {deploy}/onebox.yaml" in proc.stdout
    assert "compose/onebox" not in proc.stdout


ONE_BOX_SCENARIOS = ("onebox-qwen25-0.5b", "a10-qwen25-7b-onebox-rate1", "a10-qwen25-7b-onebox-rate4")
LEAN_FLAGS = ("--attention-backend", "triton", "--sampling-backend", "pytorch", "--grammar-backend", "none")


@pytest.mark.parametrize("name", ONE_BOX_SCENARIOS)
def test_the_one_box_scenarios_carry_the_lean_serving_flags_and_a_server_arg_comes_after(name):
    # The flags a one-GPU environment without FlashAttention 3, flashinfer's kernels and xgrammar needs are the
    # scenario's data, so no example has to pass them; a site's --server-arg is appended after them, and a server's
    # argument parser keeps the last value it reads, so the command line still overrides them.
    scenario = load_scenario(name)
    assert scenario.launch is not None and scenario.launch.extra_server_args == LEAN_FLAGS
    site = launch.Site(prefill_hosts=("127.0.0.1",), decode_hosts=("127.0.0.1",), model_path="/m",
                       dataset_path=launch.DEFAULT_DATASET, ib_devices_file=None, gpus=(0,), image="unused",
                       extra_server_args=("--attention-backend", "fa3"), transfer_backend="mooncake_tcp")
    (prefill,) = launch.Plan(scenario, site).launch_plan().role("prefill")[0].servers
    argv = list(prefill.argv)
    assert argv.index("triton") < argv.index("fa3") and argv[-2:] == ["--attention-backend", "fa3"]


def test_make_onebox_records_each_role_before_the_stack_and_onebox_repro_pair_checks_them(tmp_path):
    # The real render and the real doctor, run by the target as a user runs it; only the compose call is `false`,
    # so the stack's start fails at once (exit 1) after both records were written, each whatever its verdict.
    from pdrepro.rundir import noderecord

    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    deploy = tmp_path / "ob"
    (deploy / "nodes").mkdir(parents=True)
    (deploy / "nodes" / "decode.json").write_text("an older record")  # never left in place of a new one
    proc = _make("onebox", f"MODEL={model}", f"ONEBOX_DEPLOY={deploy}", "FORCE_TCP=1", "COMPOSE=false")
    assert proc.returncode != 0 and "did not become healthy" in proc.stderr, proc.stdout + proc.stderr
    for role in ("prefill", "decode"):
        record = noderecord.read(deploy / "nodes" / f"{role}.json")
        assert record.role == role and record.software is not None
        assert f"make onebox: {role} node record {deploy}/nodes/{role}.json" in proc.stdout
    # onebox-repro hands both to `pdrepro repro`, which keeps them in RUN/nodes and pair-checks them first.
    shown = _make("onebox-repro", "DATASET=/data/x.json", f"ONEBOX_DEPLOY={deploy}", f"RUN={tmp_path / 'run'}",
                  "PDREPRO=echo pdrepro")
    assert shown.returncode == 0, shown.stderr
    assert (f"--node-record {deploy}/nodes/prefill.json --node-record {deploy}/nodes/decode.json"
            in " ".join(shown.stdout.split())), shown.stdout
    # Without records (a deploy made before they were written), onebox-repro runs as it did: no --node-record.
    for role in ("prefill", "decode"):
        (deploy / "nodes" / f"{role}.json").unlink()
    shown = _make("onebox-repro", "DATASET=/data/x.json", f"ONEBOX_DEPLOY={deploy}", "PDREPRO=echo pdrepro")
    assert shown.returncode == 0 and "--node-record" not in shown.stdout, shown.stdout


def test_the_onebox_recipe_writes_the_records_before_it_starts_the_stack(tmp_path):
    out, model = _render(tmp_path)
    steps = [line for line in (out / "commands.txt").read_text().splitlines() if line.startswith("$ ")]
    assert steps[0] == f"$ mkdir -p {out}/nodes"
    for role, line in zip(("prefill", "decode"), steps[1:3]):
        assert line.startswith(f"$ pdrepro doctor --role {role} --scenario {SCENARIO} --model {model} ")
        assert line.endswith(f"--out {out}/nodes/{role}.json")
    assert all("docker compose" in line for line in steps[3:]) and len(steps) > 3
