"""`pdrepro render --target k8s`: manifests valid against the Kubernetes
schemas (offline, strict: unknown fields fail), wired as the plan says, and
running exactly the commands the compose target runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

kubernetes_validate = pytest.importorskip("kubernetes_validate", reason="test extra kubernetes-validate not installed")

from render_targets import LAUNCHED, cases, render_argv  # noqa: E402

from pdrepro.cli import main  # noqa: E402
from pdrepro.core.pins import load_pins  # noqa: E402
from pdrepro.engines import engine  # noqa: E402
from pdrepro.launch.targets import k8s  # noqa: E402
from pdrepro.scenario.model import load_scenario  # noqa: E402

# The oldest and the newest release the bundled schemas cover that we claim.
K8S_VERSIONS = ("1.29", "1.37")


def _render(tmp_path: Path, name: str, *extra: str) -> list[dict]:
    out = tmp_path / "k8s"
    assert main([*render_argv(name, "k8s", out), *extra]) == 0
    return [o for f in sorted(out.glob("*.yaml")) for o in yaml.safe_load_all(f.read_text())]


def _by_kind(objects, kind):
    return {o["metadata"]["name"]: o for o in objects if o["kind"] == kind}


@pytest.mark.parametrize("name", [n for n, t in cases(["k8s"])])
def test_manifests_validate_offline(name, tmp_path):
    objects = _render(tmp_path, name)
    kinds = sorted(o["kind"] for o in objects)
    assert kinds == sorted(["Namespace", "PersistentVolumeClaim", "Service", "StatefulSet", "Service", "StatefulSet",
                            "Deployment", "Service", "ConfigMap", "Job"])
    for version in K8S_VERSIONS:
        for obj in objects:
            # strict: additionalProperties false, so a misspelt field fails too.
            kubernetes_validate.validate(obj, version, strict=True)


def test_validator_catches_a_wrong_manifest(tmp_path):
    # The check above can fail: a misplaced field and a wrong type are refused.
    sts = _by_kind(_render(tmp_path, "h20-qwen3-235b-1p1d"), "StatefulSet")["pdrepro-prefill"]
    bad = json.loads(json.dumps(sts))
    bad["spec"]["template"]["spec"]["containers"][0]["hostNetwork"] = True
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(bad, K8S_VERSIONS[-1], strict=True)
    bad = json.loads(json.dumps(sts))
    bad["spec"]["replicas"] = "two"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(bad, K8S_VERSIONS[-1], strict=True)


def test_2p2d_wiring(tmp_path):
    scenario = load_scenario("h20-qwen3-235b-2p2d")
    objects = _render(tmp_path, scenario.name)
    sets = _by_kind(objects, "StatefulSet")
    assert set(sets) == {"pdrepro-prefill", "pdrepro-decode"}
    for role, sts in (("prefill", sets["pdrepro-prefill"]), ("decode", sets["pdrepro-decode"])):
        pod = sts["spec"]["template"]["spec"]
        assert sts["spec"]["replicas"] == 2
        assert pod["hostNetwork"] is True and pod["dnsPolicy"] == "ClusterFirstWithHostNet"
        assert not pod.get("hostIPC") and not pod.get("hostPID")
        term = pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]
        assert term["topologyKey"] == "kubernetes.io/hostname"
        (c,) = pod["containers"]
        assert c["securityContext"] == {"privileged": False, "capabilities": {"add": ["IPC_LOCK"]}}
        assert c["resources"]["limits"] == {"nvidia.com/gpu": 8, "rdma/hca": 1}
        env = {e["name"]: e for e in c["env"]}
        assert env["SGLANG_HOST_IP"]["valueFrom"]["fieldRef"]["fieldPath"] == "status.podIP"
        assert "CUDA_VISIBLE_DEVICES" not in env  # the device plugin picks the GPUs
        assert c["image"] == load_pins()["GPU_IMAGE"]
        svc = _by_kind(objects, "Service")[f"pdrepro-{role}"]
        assert svc["spec"]["clusterIP"] == "None" and sts["spec"]["serviceName"] == f"pdrepro-{role}"
    router = _by_kind(objects, "Deployment")["pdrepro-router"]["spec"]["template"]["spec"]["containers"][0]
    argv = router["command"]
    assert argv.count("--prefill") == 2 and argv.count("--decode") == 2
    assert "http://pdrepro-prefill-1.pdrepro-prefill:30000" in argv
    assert argv[argv.index("http://pdrepro-prefill-1.pdrepro-prefill:30000") + 1] == "8998"
    assert router["readinessProbe"]["httpGet"]["path"] == "/readiness"
    assert _by_kind(objects, "Service")["pdrepro-router"]["spec"]["ports"][0]["port"] == 8000
    job = _by_kind(objects, "Job")["pdrepro-sweep"]["spec"]["template"]["spec"]
    script = job["containers"][0]["command"][2]
    # One `pdrepro repro` (tests/commands/test_pipeline.py), with the gates from their ConfigMap.
    assert script.count("pdrepro repro ") == 1 and "--gates /gates" in script and '--out "$run"' in script
    import subprocess

    syntax = subprocess.run(["bash", "-n", "-c", script], capture_output=True, text=True)
    assert syntax.returncode == 0, syntax.stderr
    assert "--router http://pdrepro-router:8000" in script
    assert "--bench-in-place" in script  # no Docker engine inside the Job
    shipped = yaml.safe_load(_by_kind(objects, "ConfigMap")["pdrepro-scenario"]["data"]["scenario.yaml"])
    assert shipped["name"] == scenario.name and shipped["topology"]["decode"]["nodes"] == 2


def test_options_reach_the_manifests(tmp_path):
    objects = _render(tmp_path, "h20-qwen3-235b-1p1d", "--rdma-resource", "none", "--namespace", "pd-test",
                      "--shared-claim", "pd-runs")
    assert {o["metadata"].get("namespace", o["metadata"]["name"]) for o in objects} == {"pd-test"}
    for sts in _by_kind(objects, "StatefulSet").values():
        (c,) = sts["spec"]["template"]["spec"]["containers"]
        assert c["resources"]["limits"] == {"nvidia.com/gpu": 8}
        assert {"name": "shared", "persistentVolumeClaim": {"claimName": "pd-runs"}} in sts["spec"]["template"]["spec"]["volumes"]
    objects = _render(tmp_path, "h20-qwen3-235b-1p1d", "--rdma-resource", "example.com/roce_nic")
    (c,) = _by_kind(objects, "StatefulSet")["pdrepro-decode"]["spec"]["template"]["spec"]["containers"]
    assert c["resources"]["limits"]["example.com/roce_nic"] == 1


@pytest.mark.parametrize("args,expected", [
    (["--namespace", "PD_Test"], "--namespace 'PD_Test': not a Kubernetes name"),
    (["--rdma-resource", "hca"], "--rdma-resource 'hca': expected a device-plugin resource"),
    (["--shared-claim", ""], "--shared-claim '': not a Kubernetes name"),
])
def test_bad_cluster_options_are_one_line(args, expected, tmp_path, capsys):
    out = tmp_path / "k8s"
    assert main([*render_argv("h20-qwen3-235b-1p1d", "k8s", out), *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and expected in err[0], err
    assert not out.exists()


# Every other target is held to what compose runs: same argv for every server
# and the router, same environment except what the cluster decides.
OTHER_TARGETS = [t for t in LAUNCHED if t != "compose"]


@pytest.mark.parametrize("name,target", [c for c in cases(OTHER_TARGETS) if c[0] in dict(cases(["compose"]))])
def test_commands_equal_the_compose_ones(name, target, tmp_path):
    scenario = load_scenario(name)
    reference = LAUNCHED["compose"](_rendered(tmp_path, name, "compose"), scenario)
    other = LAUNCHED[target](_rendered(tmp_path, name, target), scenario)
    assert other.router == reference.router
    assert sorted(other.servers) == sorted(reference.servers)
    for server, (argv, env) in reference.servers.items():
        got_argv, got_env = other.servers[server]
        assert got_argv == argv, server
        decided = set(k8s.cluster_env(engine(scenario.launch.engine))) if target == "k8s" else set()
        left = {k: v for k, v in env.items() if k not in decided}
        assert {k: v for k, v in got_env.items() if k not in decided} == left, server


def _rendered(tmp_path: Path, name: str, target: str) -> Path:
    out = tmp_path / target
    assert main(render_argv(name, target, out)) == 0
    return out


def test_each_server_pod_records_its_node_and_the_sweep_checks_the_pair_first(tmp_path):
    objects = _render(tmp_path, "h20-qwen3-235b-1p1d")
    sets = _by_kind(objects, "StatefulSet")
    for role in ("prefill", "decode"):
        pod = sets[f"pdrepro-{role}"]["spec"]["template"]["spec"]
        (init,) = pod["initContainers"]
        script = init["command"][-1]
        assert f"pdrepro doctor --role {role} --scenario h20-qwen3-235b-1p1d" in script
        assert '--out "/shared/nodes/$POD_NAME.json"' in script and script.endswith('test -s "/shared/nodes/$POD_NAME.json"')
        # The server's own environment (what doctor reads the knobs from), and the shared volume it writes to.
        (server,) = pod["containers"]
        server_env = {e["name"]: e.get("value") for e in server["env"] if "value" in e}
        init_env = {e["name"]: e.get("value") for e in init["env"] if "value" in e}
        assert {k: v for k, v in server_env.items() if k != "PYTHONUNBUFFERED"}.items() <= init_env.items()
        assert {"name": "shared", "mountPath": "/shared"} in init["volumeMounts"]
    (job,) = _by_kind(objects, "Job").values()
    words = job["spec"]["template"]["spec"]["containers"][0]["command"][-1].split()
    assert [words[i + 1] for i, w in enumerate(words) if w == "--node-record"] == [
        "/shared/nodes/pdrepro-prefill-0.json", "/shared/nodes/pdrepro-decode-0.json"]
