"""xPyD topology: validated at load, rendered as one launch plan with every
node's servers and one router naming every server; compose runs that plan."""

from __future__ import annotations

import pytest
import yaml
from composecli import REPO, config
from render_targets import node_ips

from pdrepro.cli import main
from pdrepro.core.errors import UserError
from pdrepro.launch import plan as launch
from pdrepro.launch.targets import compose
from pdrepro.scenario.model import load_scenario


def _site(prefill, decode, gpus=8) -> launch.Site:
    return launch.Site(prefill_hosts=tuple(prefill), decode_hosts=tuple(decode), model_path="/m", dataset_path="/d",
                       ib_devices_file="/i.json", gpus=tuple(range(gpus)), image="img")


def _scenario(tmp_path, topology=None, ports=None, name="s.yaml") -> str:
    data = load_scenario("h20-qwen3-235b-1p1d").to_dict()
    if topology is not None:
        data["topology"] = topology
    if ports is not None:
        data["launch"]["ports"] = ports
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return str(path)


def test_2p2d_plan_has_four_nodes_and_one_router():
    scenario = load_scenario("h20-qwen3-235b-2p2d")
    plan = launch.Plan(scenario, _site(["10.0.0.1", "10.0.0.2"], ["10.0.1.1", "10.0.1.2"])).launch_plan()
    assert plan.topology == "2P2D"
    assert [n.name for n in plan.nodes] == ["prefill-0", "prefill-1", "decode-0", "decode-1"]
    assert [s.env["SGLANG_HOST_IP"] for s in plan.servers] == ["10.0.0.1", "10.0.0.2", "10.0.1.1", "10.0.1.2"]
    argv = list(plan.router_argv)
    workers = argv[argv.index("--pd-disaggregation") + 1:argv.index("--policy")]
    assert workers == ["--prefill", "http://10.0.0.1:30000", "8998", "--prefill", "http://10.0.0.2:30000", "8998",
                       "--decode", "http://10.0.1.1:30001", "--decode", "http://10.0.1.2:30001"]
    # Same model, sweep and per-request bounds as the published 1P1D scenario.
    one = load_scenario("h20-qwen3-235b-1p1d")
    assert (scenario.model, scenario.sweep, scenario.thresholds, scenario.launch) == \
        (one.model, one.sweep, one.thresholds, one.launch)


def test_servers_per_node_get_own_ports_and_gpus(tmp_path):
    ports = {"prefill": 30000, "decode": 30010, "bootstrap": 8998, "router": 8000}
    topo = {"prefill": {"nodes": 1, "servers_per_node": 2}, "decode": {"nodes": 1, "servers_per_node": 2}}
    scenario = load_scenario(_scenario(tmp_path, topo, ports))
    # TP 8 x 2 servers per node: 16 GPUs on each node.
    plan = launch.Plan(scenario, _site(["10.0.0.1"], ["10.0.1.1"], gpus=16)).launch_plan()
    p0, p1 = plan.role("prefill")[0].servers
    assert (p0.name, p0.port, p0.bootstrap_port, p0.gpus) == ("prefill-0-0", 30000, 8998, tuple(range(8)))
    assert (p1.name, p1.port, p1.bootstrap_port, p1.gpus) == ("prefill-0-1", 30001, 8999, tuple(range(8, 16)))
    assert "--disaggregation-bootstrap-port 8999" in " ".join(p1.argv)
    assert p1.env["CUDA_VISIBLE_DEVICES"] == "8,9,10,11,12,13,14,15"
    assert " ".join(plan.router_argv).count("--decode") == 2
    with pytest.raises(UserError, match="2 servers run on 10.0.0.1 with TP 8 and 8, which needs 16 GPUs"):
        launch.Plan(scenario, _site(["10.0.0.1"], ["10.0.1.1"], gpus=8))
    # compose runs one server per node and says so.
    with pytest.raises(UserError, match="use --target k8s"):
        compose.compose_files(launch.Plan(scenario, _site(["10.0.0.1"], ["10.0.1.1"], gpus=16)), "out")


BAD_TOPOLOGY = {
    "unknown key": ({"prefill": {"nodes": 2, "gpus": 8}}, None, "unknown key topology.prefill.gpus"),
    "zero nodes": ({"prefill": {"nodes": 0}}, None, "topology.prefill.nodes: 0 is below the minimum 1"),
    "not an int": ({"decode": {"servers_per_node": "two"}}, None, "topology.decode.servers_per_node: expected an integer"),
    "port ranges overlap": ({"prefill": {"nodes": 1, "servers_per_node": 2}}, None,
                            "launch.ports.prefill and launch.ports.decode overlap"),
    "unknown top key": ({"prefil": {"nodes": 1}}, None, "unknown key topology.prefil"),
}


@pytest.mark.parametrize("case", sorted(BAD_TOPOLOGY))
def test_bad_topology_is_one_line(case, tmp_path):
    topo, ports, expected = BAD_TOPOLOGY[case]
    path = _scenario(tmp_path, topo, ports)
    with pytest.raises(UserError) as info:
        load_scenario(path)
    assert expected in str(info.value) and path in str(info.value) and "\n" not in str(info.value)


BAD_IPS = {
    "too few prefill ips": (["--prefill-ip", "192.0.2.10", "--decode-ip", "192.0.2.20,192.0.2.21"],
                            "--prefill-ip '192.0.2.10': the scenario has 2 node(s)"),
    "same ip twice in a role": (["--prefill-ip", "192.0.2.10,192.0.2.10", "--decode-ip", "192.0.2.20,192.0.2.21"],
                                "an address is listed twice"),
    "loopback among several": (["--prefill-ip", "127.0.0.1,192.0.2.11", "--decode-ip", "192.0.2.20,192.0.2.21"],
                               "--prefill-ip 127.0.0.1: a loopback address"),
}


@pytest.mark.parametrize("case", sorted(BAD_IPS))
def test_bad_node_addresses_are_one_line(case, tmp_path, capsys):
    args, expected = BAD_IPS[case]
    out = tmp_path / "out"
    assert main(["render", "--scenario", "h20-qwen3-235b-2p2d", *args, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and expected in err[0], err
    assert not out.exists()


def test_2p2d_on_one_box_is_refused_by_port(tmp_path, capsys):
    # Every node at one address: the two prefill servers would share port 30000.
    args = ["--prefill-ip", "127.0.0.1,127.0.0.1", "--decode-ip", "127.0.0.1,127.0.0.1", "--gpus", ",".join(map(str, range(32)))]
    assert main(["render", "--scenario", "h20-qwen3-235b-2p2d", *args, "--out", str(tmp_path / "o")]) == 2
    assert "both need port 30000" in capsys.readouterr().err


def _set_env(service: dict) -> dict:
    return {k: v for k, v in (service.get("environment") or {}).items() if v is not None and k != "PYTHONUNBUFFERED"}


def test_compose_runs_the_2p2d_plan(tmp_path):
    """Each node's compose file, rendered by the real compose CLI with that
    node's env file, runs exactly the plan's server; decode-0's router names
    every server."""
    name = "h20-qwen3-235b-2p2d"
    scenario = load_scenario(name)
    prefill_ips, decode_ips = node_ips(scenario)
    out = tmp_path / "deploy"
    assert main(["render", "--scenario", name, "--prefill-ip", prefill_ips, "--decode-ip", decode_ips, "--out", str(out)]) == 0
    plan = launch.Plan(scenario, launch.Site(
        prefill_hosts=tuple(prefill_ips.split(",")), decode_hosts=tuple(decode_ips.split(",")),
        model_path="/models/Qwen3-235B-A22B-Instruct-2507", dataset_path=launch.DEFAULT_DATASET,
        ib_devices_file=launch.DEFAULT_IB_DEVICES, gpus=tuple(range(8)), image="unused")).launch_plan()
    for node in plan.nodes:
        services = config(out / f"{node.name}.yaml", out / f"{node.name}.env")["services"]
        assert set(services) == ({node.role, "router"} if node.name == "decode-0" else {node.role}), node.name
        (server,) = node.servers
        assert services[node.role]["command"] == list(server.argv), node.name
        assert _set_env(services[node.role]) == server.env, node.name
        if node.name == "decode-0":
            assert services["router"]["command"] == list(plan.router_argv)


def _model(tmp_path):
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    return model


def test_make_repro_reads_decode_0_of_an_xpyd_render(tmp_path):
    """With one env file per node, `make repro` on decode-0 (the router's node)
    reads decode-0.env: the router, the prefill-0 and decode-0 URLs come from it."""
    import subprocess
    import sys

    deploy = tmp_path / "deploy"
    assert main(["render", "--scenario", "h20-qwen3-235b-2p2d", "--prefill-ip", "127.0.0.1,127.0.0.2",
                 "--decode-ip", "127.0.0.3,127.0.0.4", "--out", str(deploy)]) == 2  # loopback on several nodes
    logs = tmp_path / "logs"
    logs.mkdir()
    prefill, decode = node_ips(load_scenario("h20-qwen3-235b-2p2d"))
    dataset = tmp_path / "sharegpt.json"
    dataset.write_text("[]")
    assert main(["render", "--scenario", "h20-qwen3-235b-2p2d", "--prefill-ip", prefill, "--decode-ip", decode,
                 "--log-dir", str(logs), "--dataset", str(dataset), "--model", str(_model(tmp_path)), "--out", str(deploy)]) == 0
    proc = subprocess.run(["make", "-s", "-o", "setup", "repro", f"DEPLOY={deploy}", "SCENARIO=h20-qwen3-235b-2p2d",
                           f"PDREPRO={sys.executable} -m pdrepro", f"RUN={tmp_path / 'run'}", "SKIP_DOCTOR=1",
                           f"PREFILL_LOGS={logs}", "SWEEP_ARGS=--wait-timeout 1"],
                          cwd=REPO, capture_output=True, text=True, timeout=180)
    assert proc.returncode != 0
    # The router is decode-0's (192.0.2.20), as decode-0.env says; nothing answers there.
    assert "== 2/4 sweep: h20-qwen3-235b-2p2d against http://192.0.2.20:8000" in proc.stdout, proc.stderr
    assert "not healthy after 1 s" in proc.stderr
