"""Every server of a role writes its own log, named by one rule (rundir.server_log_name) that every target
takes from the launch plan: the first keeps <role>.log, the others <role>-<i>.log, i over the role's servers
node-major, so servers of several nodes can share one folder without clobbering each other's file."""

from __future__ import annotations

import subprocess

import yaml
from composecli import config

from pdrepro.cli import main
from pdrepro.launch import plan as launch
from pdrepro.launch.targets import compose, k8s, slurm
from pdrepro.rundir import server_log_index, server_log_name
from pdrepro.scenario.model import load_scenario


def _plan(name: str, prefill=("10.0.0.1", "10.0.0.2"), decode=("10.0.1.1", "10.0.1.2"), gpus=8) -> launch.Plan:
    site = launch.Site(prefill_hosts=tuple(prefill), decode_hosts=tuple(decode), model_path="/m", dataset_path="/d",
                       ib_devices_file="/i.json", gpus=tuple(range(gpus)), image="img")
    return launch.Plan(load_scenario(name), site)


def _scenario_2x2(tmp_path) -> str:
    data = load_scenario("h20-qwen3-235b-2p2d").to_dict()
    data["topology"] = {"prefill": {"nodes": 2, "servers_per_node": 2}, "decode": {"nodes": 2, "servers_per_node": 2}}
    data["launch"]["ports"] = {"prefill": 30000, "decode": 30010, "bootstrap": 8998, "router": 8000}
    path = tmp_path / "two-by-two.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return str(path)


def test_rule_keeps_the_first_name_and_reads_back():
    assert [server_log_name("prefill", i) for i in range(3)] == ["prefill.log", "prefill-1.log", "prefill-2.log"]
    assert [server_log_index("prefill", n) for n in ("prefill.log", "prefill-2.log", "prefill-0.log", "prefill-0-1.log",
                                                     "decode.log", "prefill.log.1", "prefill-x.log")] == \
        [0, 2, None, None, None, None, None]


def test_plan_numbers_servers_node_major(tmp_path):
    scenario = load_scenario(_scenario_2x2(tmp_path))
    site = launch.Site(prefill_hosts=("10.0.0.1", "10.0.0.2"), decode_hosts=("10.0.1.1", "10.0.1.2"), model_path="/m",
                       dataset_path="/d", ib_devices_file="/i.json", gpus=tuple(range(16)), image="img")
    plan = launch.Plan(scenario, site).launch_plan()
    names = {s.name: s.log_name for s in plan.servers}
    assert names == {"prefill-0-0": "prefill.log", "prefill-0-1": "prefill-1.log", "prefill-1-0": "prefill-2.log",
                     "prefill-1-1": "prefill-3.log", "decode-0-0": "decode.log", "decode-0-1": "decode-1.log",
                     "decode-1-0": "decode-2.log", "decode-1-1": "decode-3.log"}


def test_compose_nodes_write_their_own_file(tmp_path):
    plan = _plan("h20-qwen3-235b-2p2d")
    lp = plan.launch_plan()
    assert main(["render", "--target", "compose", "--scenario", "h20-qwen3-235b-2p2d", "--prefill-ip", "10.0.0.1,10.0.0.2",
                 "--decode-ip", "10.0.1.1,10.0.1.2", "--out", str(tmp_path)]) == 0
    seen = []
    for role in ("prefill", "decode"):
        for node in lp.role(role):
            env_file = tmp_path / compose.env_file_name(role, node.index, plan)
            compose_file = tmp_path / compose.node_file_name(role, node.index, plan, "yaml")
            # What compose itself makes of the file: the tee target in the container's entrypoint.
            entry = " ".join(config(compose_file, env_file)["services"][role]["entrypoint"])
            assert f"tee -a /logs/{node.servers[0].log_name} <" in entry, entry
            seen.append(node.servers[0].log_name)
    assert seen == ["prefill.log", "prefill-1.log", "decode.log", "decode-1.log"]


def test_compose_single_pair_keeps_the_role_name(tmp_path):
    assert main(["render", "--target", "compose", "--scenario", "h20-qwen3-235b-1p1d", "--prefill-ip", "10.0.0.1",
                 "--decode-ip", "10.0.1.1", "--out", str(tmp_path)]) == 0
    for role in ("prefill", "decode"):
        entry = " ".join(config(tmp_path / f"{role}.yaml", tmp_path / f"{role}.env")["services"][role]["entrypoint"])
        assert f"tee -a /logs/{role}.log <" in entry


def _wrapper_run(container: dict, pod: str, logs) -> subprocess.CompletedProcess:
    # The container's own wrapper under bash, as Kubernetes hands it on (`$$` reduced to `$`), with the shared
    # volume's folder at a temporary path.
    script = container["command"][2].replace("$$", "$").replace("/logs/", f"{logs}/")
    return subprocess.run(["bash", "-c", script, "sh", "-c", f"echo served by {pod}"],
                          env={"POD_NAME": pod, "PATH": "/usr/bin:/bin"}, capture_output=True, text=True, timeout=30)


def test_k8s_pods_share_one_folder_under_plan_names(tmp_path):
    lp = _plan("h20-qwen3-235b-2p2d", prefill=("p0", "p1"), decode=("d0", "d1")).launch_plan()
    assert k8s.shared_log_folder(lp)
    cluster = k8s.Cluster(namespace="ns", image="img", model_path="/m", dataset_path="/d", ib_devices_file="/i.json",
                          rdma_resource=None, shared_claim="claim", scenario_yaml="", configuration=None)
    files = k8s.manifests(lp, cluster)
    logs = tmp_path / "logs"
    logs.mkdir()
    for role, file in (("prefill", "20-prefill.yaml"), ("decode", "30-decode.yaml")):
        (statefulset,) = [o for o in yaml.safe_load_all(files[file]) if o["kind"] == "StatefulSet"]
        (container,) = statefulset["spec"]["template"]["spec"]["containers"]
        mount = [m for m in container["volumeMounts"] if m["name"] == "shared"][0]
        assert mount == {"name": "shared", "mountPath": "/logs", "subPath": "logs"}
        for node in lp.role(role):
            proc = _wrapper_run(container, f"{k8s.statefulset_name(role)}-{node.index}", logs)
            assert proc.returncode == 0, proc.stderr
        stray = _wrapper_run(container, f"{k8s.statefulset_name(role)}-7", logs)
        assert stray.returncode == 2 and "not in the launch plan" in stray.stderr
    got = {p.name: p.read_text().strip() for p in logs.iterdir()}
    assert got == {"prefill.log": "served by pdrepro-prefill-0", "prefill-1.log": "served by pdrepro-prefill-1",
                   "decode.log": "served by pdrepro-decode-0", "decode-1.log": "served by pdrepro-decode-1"}
    job = k8s.job_script(lp, cluster)
    assert "--logs-from /shared/logs " in job and "--prefill-logs-from" not in job


def test_k8s_single_pair_keeps_a_folder_per_pod():
    lp = _plan("h20-qwen3-235b-1p1d", prefill=("p0",), decode=("d0",)).launch_plan()
    assert not k8s.shared_log_folder(lp)


def test_slurm_links_every_plan_name_to_its_step_log(tmp_path):
    scenario = load_scenario(_scenario_2x2(tmp_path))
    prefill, decode = slurm.symbolic_hosts(scenario)
    site = launch.Site(prefill_hosts=prefill, decode_hosts=decode, model_path="/m", dataset_path="/d",
                       ib_devices_file="/i.json", gpus=tuple(range(16)), image="img")
    plan = launch.Plan(scenario, site)
    job = slurm.gpu_job(plan)
    links = dict((alias, src) for src, alias in job.log_aliases)
    assert links == {"prefill.log": "prefill-0-0.log", "prefill-1.log": "prefill-0-1.log", "prefill-2.log": "prefill-1-0.log",
                     "prefill-3.log": "prefill-1-1.log", "decode.log": "decode-0-0.log", "decode-1.log": "decode-0-1.log",
                     "decode-2.log": "decode-1-0.log", "decode-3.log": "decode-1-1.log"}
    # Every step of the job is one of those servers or the router: no server log is left unnamed.
    assert {s.name for s in job.servers} == {src.removesuffix(".log") for src in links.values()} | {"router"}


def test_slurm_one_server_per_node_needs_only_the_first_link():
    plan = _plan("h20-qwen3-235b-2p2d")
    # prefill-1 (node 1) already logs to prefill-1.log, the plan's name for it; a link to itself would loop.
    assert slurm.gpu_job(plan).log_aliases == (("prefill-0.log", "prefill.log"), ("decode-0.log", "decode.log"))
    assert [s.log_name for s in plan.launch_plan().servers] == ["prefill.log", "prefill-1.log", "decode.log", "decode-1.log"]
