"""The compose files `pdrepro render` writes, read back by the real compose v2 CLI: wiring, and argv
and environment identical to the launch plan's (and to what `pdrepro render` prints)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import yaml
from composecli import config

from pdrepro.cli import main
from pdrepro.core.pins import load_pins
from pdrepro.launch import plan as launch
from pdrepro.scenario.model import load_scenario

PREFILL_IP, DECODE_IP = "192.0.2.10", "192.0.2.20"


def _render(tmp_path: Path, *extra: str, scenario: str = "h20-qwen3-235b-1p1d") -> Path:
    out = tmp_path / "deploy"
    rc = main(["render", "--scenario", scenario, "--prefill-ip", PREFILL_IP, "--decode-ip", DECODE_IP, "--out", str(out), *extra])
    assert rc == 0
    return out


def _node(out: Path, stem: str, extra_env: dict | None = None) -> dict:
    return config(out / f"{stem}.yaml", out / f"{stem}.env", extra_env)["services"]


def _site(**kw) -> launch.Site:
    values = dict(prefill_hosts=(PREFILL_IP,), decode_hosts=(DECODE_IP,),
                  model_path="/models/Qwen3-235B-A22B-Instruct-2507", dataset_path=launch.DEFAULT_DATASET,
                  ib_devices_file=launch.DEFAULT_IB_DEVICES, gpus=tuple(range(8)), image=load_pins()["GPU_IMAGE"])
    values.update(kw)
    return launch.Site(**values)


def _set_env(service: dict) -> dict:
    """The variables the container gets (compose drops the ones left null)."""
    return {k: v for k, v in (service.get("environment") or {}).items() if v is not None}


def _runs(words: list[str]) -> list[str]:
    """What the container gets: `compose config` prints a file compose would read again, `$` doubled."""
    return [w.replace("$$", "$") for w in words]


def _mounts(service: dict) -> dict:
    return {v["target"]: v for v in service["volumes"]}


# ---- wiring ------------------------------------------------------------------

@pytest.mark.parametrize("role", ["prefill", "decode"])
def test_pd_server_wiring(role, tmp_path):
    out = _render(tmp_path)
    svc = _node(out, role)[role]
    plan = launch.Plan(load_scenario("h20-qwen3-235b-1p1d"), _site())
    server = plan.launch_plan().role(role)[0].servers[0]
    assert svc["command"] == list(server.argv)
    assert svc["image"] == load_pins()["GPU_IMAGE"]
    env = _set_env(svc)
    assert env == {**server.env, "PYTHONUNBUFFERED": "1"}
    assert env["SGLANG_HOST_IP"] == (PREFILL_IP if role == "prefill" else DECODE_IP)
    # RDMA without privileged.
    assert not svc.get("privileged")
    assert svc["network_mode"] == "host" and svc["ipc"] == "host" and svc["init"] is True
    assert {d["source"] for d in svc["devices"]} == {"/dev/infiniband"}
    assert set(svc["cap_add"]) == {"IPC_LOCK", "SYS_RESOURCE"}
    assert svc["ulimits"]["memlock"] == -1
    (gpu,) = svc["deploy"]["resources"]["reservations"]["devices"]
    assert gpu["driver"] == "nvidia" and gpu["capabilities"] == ["gpu"]
    # All GPUs reserved (count: all), the server's set chosen through CUDA: a
    # comma-joined device id would be one invalid CDI name on newer engines.
    assert gpu["count"] == -1 and "device_ids" not in gpu
    assert env["CUDA_VISIBLE_DEVICES"] == "0,1,2,3,4,5,6,7" and env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
    mounts = _mounts(svc)
    for path in (plan.site.model_path, plan.site.dataset_path, plan.site.ib_devices_file):
        assert mounts[path]["source"] == path and mounts[path]["read_only"] is True
    assert mounts["/logs"]["source"] == launch.DEFAULT_LOG_DIR and not mounts["/logs"].get("read_only")
    # The raw log goes to the host folder under the plan's log name, and the command runs unchanged ($0 "$@"),
    # its status the container's (tests/launch/test_compose_up.py runs the wrapper in a container).
    bash, dash_c, script = _runs(svc["entrypoint"])
    assert (bash, dash_c) == ("bash", "-c") and f"tee -a /logs/{role}.log <" in script
    assert '"$0" "$@" > "$pipe" 2>&1 &' in script and script.endswith('exit "$status"')
    health = svc["healthcheck"]
    assert f"127.0.0.1:{server.port}/health_generate" in " ".join(health["test"])
    assert health["start_period"] == "1h0m0s" and health["start_interval"] == "15s"
    assert svc["container_name"] == f"pdrepro-{role}"
    assert svc["restart"] == "no"


def test_router_wiring(tmp_path):
    services = _node(_render(tmp_path), "decode")
    assert set(services) == {"decode", "router"}
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


def _regular(tmp_path, same_node=False) -> tuple[Path, Path]:
    scenario = _variant(tmp_path, stacks=["disaggregated", "regular"],
                        ports={"prefill": 30000, "decode": 30001, "bootstrap": 8998, "router": 8000, "regular": [30000, 30001]},
                        regular_tp=4)
    decode_ip = PREFILL_IP if same_node else DECODE_IP
    out = tmp_path / "deploy"
    assert main(["render", "--scenario", str(scenario), "--prefill-ip", PREFILL_IP, "--decode-ip", decode_ip,
                 "--gpus", ",".join(map(str, range(16 if same_node else 8))), "--out", str(out)]) == 0
    return out, scenario


def test_regular_wiring(tmp_path):
    out, _ = _regular(tmp_path)
    services = _node(out, "regular")
    assert set(services) == {"regular-1", "regular-2", "regular-router"}
    for name, port in (("regular-1", "30000"), ("regular-2", "30001")):
        cmd = " ".join(services[name]["command"])
        assert f"--port {port}" in cmd and "--tp-size 4" in cmd
        assert "--disaggregation" not in cmd
        assert f"/logs/{name}.log" in " ".join(services[name]["entrypoint"])
        assert services[name]["deploy"]["resources"]["reservations"]["devices"][0]["driver"] == "nvidia"
        assert "devices" not in services[name]  # no RDMA in the comparison stack
    router = services["regular-router"]
    assert router["command"][router["command"].index("--worker-urls") + 1:][:2] == ["http://192.0.2.10:30000", "http://192.0.2.20:30001"]
    assert "--pd-disaggregation" not in router["command"]
    assert list(router["depends_on"]) == ["regular-2"]


@pytest.mark.parametrize("stem", ["prefill", "decode"])
def test_compose_reads_only_the_two_knobs(stem, tmp_path):
    """The argv is in the file, not in variables: compose interpolates nothing but the locked-memory limit
    and the start-up grace, each with the plan's value as its default."""
    out = _render(tmp_path)
    text = (out / f"{stem}.yaml").read_text()
    assert set(re.findall(r"(?<!\$)\$\{([A-Za-z_][A-Za-z0-9_]*)", text)) == {"MEMLOCK", "SERVER_START_PERIOD"}
    empty = tmp_path / "empty.env"
    empty.write_text("")
    svc = config(out / f"{stem}.yaml", empty)["services"][stem]
    assert svc["ulimits"]["memlock"] == -1 and svc["healthcheck"]["start_period"] == "1h0m0s"


def test_memlock_is_overridable(tmp_path):
    out = _render(tmp_path)
    svc = _node(out, "prefill", {"MEMLOCK": str(8 * 2**20)})["prefill"]
    assert svc["ulimits"]["memlock"] == 8 * 2**20
    rendered = _node(_render(tmp_path / "m", "--memlock", str(2**30)), "prefill")["prefill"]
    assert rendered["ulimits"]["memlock"] == 2**30


# ---- compose and launch.py agree --------------------------------------------

def test_published_launch_argv_agrees(tmp_path):
    out = _render(tmp_path)
    plan = launch.Plan(load_scenario("h20-qwen3-235b-1p1d"), _site())
    prefill = _node(out, "prefill")["prefill"]
    decode_stack = _node(out, "decode")
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
    prefill = _node(out, "prefill")["prefill"]
    assert prefill["command"] == plan.prefill_argv()
    assert prefill["command"][-3:] == ["--mem-fraction-static", "0.85", "--enable-metrics"]
    got = _set_env(prefill)
    assert got["MC_SLICE_SIZE"] == "262144" and got["SGLANG_DISAGGREGATION_WAITING_TIMEOUT"] == "600"
    assert "MC_NUM_QP_PER_EP" not in got  # unset tunables keep the upstream default


@pytest.mark.parametrize("same_node", [False, True])
def test_regular_stack_argv_agrees(tmp_path, same_node):
    out, scenario = _regular(tmp_path, same_node)
    services = _node(out, "regular")
    decode_ip = PREFILL_IP if same_node else DECODE_IP
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
    decode = _node(out, "decode")["decode"]
    prefill = _node(out, "prefill")["prefill"]
    ids = [s["environment"]["CUDA_VISIBLE_DEVICES"] for s in (prefill, decode)]
    assert (ids[0] != ids[1]) == same_node


def test_awkward_words_reach_the_server_unchanged(tmp_path):
    # A space, a dollar (compose would interpolate it), quotes, a backslash, a character past U+FFFF, YAML's
    # line breaks and a tab: the file carries each word as is (no env file holds an argv word any more, so
    # none is refused for the env file's sake).
    words = ["--served-model-name", "qwen 235b \U00010990\u2028\n\t", "--chat-template", "a$HOME'b\"c\\d",
             "--log-level", "info"]
    scenario = _variant(tmp_path, extra_server_args=words)
    out = _render(tmp_path, "--log-dir", "/var/log/pd repro", scenario=str(scenario))
    prefill = _node(out, "prefill")["prefill"]
    assert _runs(prefill["command"][-6:]) == words
    assert _mounts(prefill)["/logs"]["source"] == "/var/log/pd repro"


def test_env_file_sources_in_the_shell(tmp_path):
    out = _render(tmp_path, "--log-dir", "/var/log/pd repro")
    script = f'set -a; . "{out}/decode.env"; printf "%s|%s|%s" "$LOG_DIR" "$DECODE_IP" "$ROUTER_PORT"'
    shell = subprocess.run(["bash", "-c", script],
                           capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"})
    assert shell.returncode == 0, shell.stderr
    assert shell.stdout == f"/var/log/pd repro|{DECODE_IP}|8000"
