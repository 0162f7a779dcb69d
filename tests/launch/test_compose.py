"""The compose files, rendered by the real compose v2 CLI: wiring, and argv
identical to what launch.py builds (and `pdrepro render` prints)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from composecli import REPO, config, run_config

from pdrepro.cli import main
from pdrepro.core.pins import load_pins, parse_env_file
from pdrepro.launch import plan as launch
from pdrepro.launch.targets import compose
from pdrepro.scenario.launch_section import LAUNCH_ENV_FIXED, LAUNCH_ENV_TUNABLES
from pdrepro.scenario.model import load_scenario

EXAMPLE = REPO / "compose" / "example.env"
FILES = {name: REPO / rel for name, rel in compose.COMPOSE_FILES.items()}
PREFILL_IP, DECODE_IP = "192.0.2.10", "192.0.2.20"


def _render(tmp_path: Path, *extra: str, scenario: str = "h20-qwen3-235b-1p1d") -> Path:
    out = tmp_path / "deploy"
    rc = main(["render", "--scenario", scenario, "--prefill-ip", PREFILL_IP, "--decode-ip", DECODE_IP, "--out", str(out), *extra])
    assert rc == 0
    return out


def _site(**kw) -> launch.Site:
    values = dict(prefill_hosts=(PREFILL_IP,), decode_hosts=(DECODE_IP,),
                  model_path="/models/Qwen3-235B-A22B-Instruct-2507", dataset_path=launch.DEFAULT_DATASET,
                  ib_devices_file=launch.DEFAULT_IB_DEVICES, gpus=tuple(range(8)), image=load_pins()["GPU_IMAGE"])
    values.update(kw)
    return launch.Site(**values)


def _set_env(service: dict) -> dict:
    """The variables the container gets (compose drops the ones left null)."""
    return {k: v for k, v in (service.get("environment") or {}).items() if v is not None}


def _mounts(service: dict) -> dict:
    return {v["target"]: v for v in service["volumes"]}


# ---- wiring, with the example env file ---------------------------------------

@pytest.mark.parametrize("role", ["prefill", "decode"])
def test_pd_server_wiring(role):
    svc = config(FILES[role], EXAMPLE)["services"][role]
    ex = parse_env_file(EXAMPLE)
    cmd = svc["command"]
    assert cmd[:3] == ["python", "-m", "sglang.launch_server"]
    joined = " ".join(cmd)
    port = ex["PREFILL_PORT"] if role == "prefill" else ex["DECODE_PORT"]
    for flags in (f"--model-path {ex['MODEL_PATH']}", f"--host 0.0.0.0 --port {port}", "--tp-size 8", "--dtype bfloat16",
                  "--trust-remote-code", "--stream-interval 1", "--chunked-prefill-size -1", "--disable-radix-cache",
                  f"--disaggregation-mode {role}", "--disaggregation-transfer-backend mooncake",
                  f"--disaggregation-ib-device {ex['IB_DEVICES_FILE']}", "--enable-request-time-stats-logging"):
        assert flags in joined, flags
    assert ("--disaggregation-bootstrap-port 8998" in joined) == (role == "prefill")
    env = _set_env(svc)
    assert env["SGLANG_HOST_IP"] == (ex["PREFILL_IP"] if role == "prefill" else ex["DECODE_IP"])
    assert env["MOONCAKE_PROTOCOL"] == "rdma" and env["WITH_NVIDIA_PEERMEM"] == "1"
    # RDMA without privileged.
    assert not svc.get("privileged")
    assert svc["network_mode"] == "host" and svc["ipc"] == "host"
    assert {d["source"] for d in svc["devices"]} == {"/dev/infiniband"}
    assert set(svc["cap_add"]) == {"IPC_LOCK", "SYS_RESOURCE"}
    assert svc["ulimits"]["memlock"] == -1
    (gpu,) = svc["deploy"]["resources"]["reservations"]["devices"]
    assert gpu["driver"] == "nvidia" and gpu["capabilities"] == ["gpu"]
    # All GPUs reserved (count: all), the server's set chosen through CUDA: a
    # comma-joined device id would be one invalid CDI name on newer engines.
    assert gpu["count"] == -1 and "device_ids" not in gpu
    assert env["CUDA_VISIBLE_DEVICES"] == ex["PREFILL_GPU_IDS" if role == "prefill" else "DECODE_GPU_IDS"]
    assert env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
    mounts = _mounts(svc)
    for path in (ex["MODEL_PATH"], ex["DATASET_PATH"], ex["IB_DEVICES_FILE"]):
        assert mounts[path]["source"] == path and mounts[path]["read_only"] is True
    assert mounts["/logs"]["source"] == ex["LOG_DIR"] and not mounts["/logs"].get("read_only")
    # The raw log goes to the host folder under the service's name.
    assert f"/logs/{role}.log" in " ".join(svc["entrypoint"])
    health = svc["healthcheck"]
    assert f"127.0.0.1:{port}/health_generate" in " ".join(health["test"])
    assert health["start_period"] == "1h0m0s"
    assert svc["container_name"] == f"pdrepro-{role}"


def test_router_wiring():
    services = config(FILES["decode"], EXAMPLE)["services"]
    router = services["router"]
    assert router["command"] == [
        "python", "-m", "sglang_router.launch_router", "--host", "0.0.0.0", "--port", "8000",
        "--pd-disaggregation", "--prefill", "http://192.0.2.10:30000", "8998",
        "--decode", "http://192.0.2.20:30001", "--policy", "round_robin",
    ]
    assert router["network_mode"] == "host"
    assert "deploy" not in router  # the router needs no GPU
    assert router["depends_on"]["decode"]["condition"] == "service_healthy"
    assert "127.0.0.1:8000/readiness" in " ".join(router["healthcheck"]["test"])
    assert "/logs/router.log" in " ".join(router["entrypoint"])


def test_regular_wiring():
    services = config(FILES["regular"], EXAMPLE)["services"]
    assert set(services) == {"regular-1", "regular-2", "regular-router"}
    for name, port in (("regular-1", "30000"), ("regular-2", "30001")):
        cmd = " ".join(services[name]["command"])
        assert f"--port {port}" in cmd and "--tp-size 8" in cmd
        assert "--disaggregation" not in cmd
        assert f"/logs/{name}.log" in " ".join(services[name]["entrypoint"])
        assert services[name]["deploy"]["resources"]["reservations"]["devices"][0]["driver"] == "nvidia"
    router = services["regular-router"]
    assert router["command"][router["command"].index("--worker-urls") + 1:][:2] == ["http://192.0.2.10:30000", "http://192.0.2.20:30001"]
    assert "--pd-disaggregation" not in router["command"]
    assert list(router["depends_on"]) == ["regular-2"]


def test_example_env_is_complete_and_pinned():
    example = parse_env_file(EXAMPLE)
    used = set()
    for path in FILES.values():
        used |= set(re.findall(r"\$\{([A-Z][A-Z0-9_]*)", path.read_text()))
    missing = sorted(used - set(example))
    assert not missing, f"compose/example.env lacks {missing}"
    assert example["GPU_IMAGE"] == load_pins()["GPU_IMAGE"]
    commented = set(re.findall(r"^#([A-Z][A-Z0-9_]*)=", EXAMPLE.read_text(), re.M))
    assert set(LAUNCH_ENV_TUNABLES) <= commented


@pytest.mark.parametrize("role", ["prefill", "decode"])
def test_pass_through_env_matches_schema(role):
    raw = yaml.safe_load(FILES[role].read_text())["services"][role]["environment"]
    passed = {k for k, v in raw.items() if v is None}
    assert passed == set(LAUNCH_ENV_TUNABLES)
    assert set(LAUNCH_ENV_FIXED) <= set(raw)


def test_missing_variable_is_named(tmp_path):
    env = tmp_path / "partial.env"
    env.write_text("".join(f"{k}={v}\n" for k, v in parse_env_file(EXAMPLE).items() if k != "MODEL_PATH"))
    out = run_config(FILES["prefill"], env)
    assert out.returncode != 0
    assert "MODEL_PATH" in out.stderr and "env file" in out.stderr


def test_memlock_is_overridable():
    svc = config(FILES["prefill"], EXAMPLE, {"MEMLOCK": str(8 * 2**20)})["services"]["prefill"]
    assert svc["ulimits"]["memlock"] == 8 * 2**20


# ---- compose and launch.py agree --------------------------------------------

def test_published_launch_argv_agrees(tmp_path):
    out = _render(tmp_path)
    plan = launch.Plan(load_scenario("h20-qwen3-235b-1p1d"), _site())
    prefill = config(FILES["prefill"], out / "prefill.env")["services"]["prefill"]
    decode_stack = config(FILES["decode"], out / "decode.env")["services"]
    assert prefill["command"] == plan.prefill_argv()
    assert decode_stack["decode"]["command"] == plan.decode_argv()
    assert decode_stack["router"]["command"] == plan.router_argv()
    assert _set_env(prefill) == {**plan.server_env("prefill"), "PYTHONUNBUFFERED": "1"}
    assert _set_env(decode_stack["decode"]) == {**plan.server_env("decode"), "PYTHONUNBUFFERED": "1"}
    # And what render printed is the same argv.
    printed = (out / "commands.txt").read_text()
    assert launch.shell_line(plan.server_env("prefill"), plan.prefill_argv()) in printed
    assert launch.shell_line({}, plan.router_argv()) in printed


def _variant(tmp_path: Path, **launch_changes) -> Path:
    data = load_scenario("h20-qwen3-235b-1p1d").to_dict()
    data["launch"].update(launch_changes)
    path = tmp_path / "variant.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_tunables_and_extra_args_reach_the_servers(tmp_path):
    env = {"MOONCAKE_PROTOCOL": "rdma", "WITH_NVIDIA_PEERMEM": "1", "MC_SLICE_SIZE": "262144",
           "SGLANG_DISAGGREGATION_WAITING_TIMEOUT": "600"}
    scenario = _variant(tmp_path, env=env, enable_metrics=True, extra_server_args=["--mem-fraction-static", "0.85"])
    out = _render(tmp_path, scenario=str(scenario))
    plan = launch.Plan(load_scenario(scenario), _site())
    prefill = config(FILES["prefill"], out / "prefill.env")["services"]["prefill"]
    assert prefill["command"] == plan.prefill_argv()
    assert prefill["command"][-3:] == ["--mem-fraction-static", "0.85", "--enable-metrics"]
    got = _set_env(prefill)
    assert got["MC_SLICE_SIZE"] == "262144" and got["SGLANG_DISAGGREGATION_WAITING_TIMEOUT"] == "600"
    assert "MC_NUM_QP_PER_EP" not in got  # unset tunables keep the upstream default


@pytest.mark.parametrize("same_node", [False, True])
def test_regular_stack_argv_agrees(tmp_path, same_node):
    scenario = _variant(tmp_path, stacks=["disaggregated", "regular"],
                        ports={"prefill": 30000, "decode": 30001, "bootstrap": 8998, "router": 8000, "regular": [30000, 30001]},
                        regular_tp=4)
    decode_ip = PREFILL_IP if same_node else DECODE_IP
    out = tmp_path / "deploy"
    assert main(["render", "--scenario", str(scenario), "--prefill-ip", PREFILL_IP, "--decode-ip", decode_ip,
                 "--gpus", ",".join(map(str, range(16 if same_node else 8))), "--out", str(out)]) == 0
    services = config(FILES["regular"], out / "regular.env")["services"]
    plan = launch.Plan(load_scenario(scenario), _site(decode_hosts=(decode_ip,), gpus=tuple(range(16 if same_node else 8))))
    assert services["regular-1"]["command"] == plan.regular_argv(0)
    assert services["regular-2"]["command"] == plan.regular_argv(1)
    assert services["regular-router"]["command"] == plan.regular_router_argv()
    for i, name in enumerate(("regular-1", "regular-2")):
        env = {k: v for k, v in services[name]["environment"].items() if k.startswith("CUDA_")}
        assert env == plan.server_env("regular", i)
    gpus = [services[n]["environment"]["CUDA_VISIBLE_DEVICES"] for n in ("regular-1", "regular-2")]
    assert gpus == (["0,1,2,3", "4,5,6,7"] if same_node else ["0,1,2,3", "0,1,2,3"])
    # The disaggregated stack on one node gets disjoint GPU sets too.
    decode = config(FILES["decode"], out / "decode.env")["services"]["decode"]
    prefill = config(FILES["prefill"], out / "prefill.env")["services"]["prefill"]
    ids = [s["environment"]["CUDA_VISIBLE_DEVICES"] for s in (prefill, decode)]
    assert (ids[0] != ids[1]) == same_node


def test_env_file_reads_the_same_in_compose_and_shell(tmp_path):
    import subprocess

    scenario = _variant(tmp_path, extra_server_args=["--served-model-name", "qwen 235b", "--log-level", "info"])
    out = _render(tmp_path, "--log-dir", "/var/log/pd repro", scenario=str(scenario))
    prefill = config(FILES["prefill"], out / "prefill.env")["services"]["prefill"]
    assert prefill["command"][-4:] == ["--served-model-name", "qwen 235b", "--log-level", "info"]
    assert _mounts(prefill)["/logs"]["source"] == "/var/log/pd repro"
    shell = subprocess.run(["bash", "-c", f'set -a; . "{out}/decode.env"; printf "%s|%s" "$SERVER_EXTRA_ARGS" "$LOG_DIR"'],
                           capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"})
    assert shell.returncode == 0, shell.stderr
    assert shell.stdout == "--served-model-name 'qwen 235b' --log-level info|/var/log/pd repro"
