"""The Kubernetes target: manifests placing a launch plan on a cluster.

One StatefulSet per role (one pod per node, kept apart by pod anti-affinity),
each pod one container per server, on the host network so RoCE GIDs are the
node's own; RDMA devices through a device-plugin resource, GPUs through
nvidia.com/gpu, CAP_IPC_LOCK and nothing privileged. The router is a
Deployment behind a Service; a Job runs `pdrepro repro` (sweep, analysis, gates). Server and
router argv are the plan's, unchanged; only the GPU choice (the device plugin
assigns each container its GPUs) and the engine's host-address variable (the pod's
address, which is the node's on the host network) come from the cluster; the probes
ask the engine's health paths.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import PurePosixPath

import yaml

from ...core.errors import UserError
from ...core.roles import SERVER_ROLES
from ...engines import ServingEngine, engine
from ...scenario.model import Scenario, resolve_path
from ..plan import SERVER_START_SECONDS, LaunchPlan, NodeLaunch, Plan, ServerLaunch, url
from .base import Hosts, Rendered

APP = "pdrepro"
GPU_RESOURCE = "nvidia.com/gpu"
# The GPU env the plan sets that the cluster decides instead (see the module doc); the engine's
# host-address variable too (cluster_env).
GPU_ENV = ("CUDA_DEVICE_ORDER", "CUDA_VISIBLE_DEVICES")
PROBE_PERIOD = 15
SCENARIO_DIR = "/etc/pdrepro/scenario"


@dataclass(frozen=True)
class Cluster:
    """Where on the cluster: the options of `pdrepro render --target k8s`."""

    namespace: str
    image: str
    model_path: str
    dataset_path: str
    ib_devices_file: str
    rdma_resource: str | None      # e.g. rdma/hca; None on a TCP-only cluster
    shared_claim: str               # ReadWriteMany PVC: server logs and the run folder
    scenario_yaml: str              # the scenario file's text, handed to the Job
    configuration: str | None       # comparison scenarios: the configuration this stack is
    run_dir: str | None = None      # where the Job writes its run (an A/B arm's folder), from the shared claim


def run_subpath(run_dir: str) -> str:
    """The shared claim's folder mounted at ``run_dir`` in the Job: runs/ and the last two names of it
    (an A/B's folder and the arm), so two arms, or two A/Bs, never share one."""
    return "/".join(("runs", *PurePosixPath(run_dir).parts[-2:]))


def statefulset_name(role: str) -> str:
    return f"{APP}-{role}"


def pod_host(role: str, node: int) -> str:
    """Stable DNS name of a StatefulSet pod through its headless Service."""
    return f"{statefulset_name(role)}-{node}.{statefulset_name(role)}"


def _labels(component: str) -> dict:
    return {"app.kubernetes.io/name": APP, "app.kubernetes.io/component": component}


def _meta(name: str, cluster: Cluster, component: str) -> dict:
    return {"name": name, "namespace": cluster.namespace, "labels": _labels(component)}


def _log_name(server: ServerLaunch) -> str:
    # The container's name in its pod; further servers of a node add their index.
    return server.role if server.index == 0 else f"{server.role}-{server.index}"


def shared_log_folder(plan: LaunchPlan) -> bool:
    """Whether every server writes into one folder of the shared volume (logs/), under its plan log name:
    so when a role has several servers, for the sweep to read all of them from one place. A stack of one
    server per role keeps a folder per pod (logs/<pod>/prefill.log), as it always has."""
    return any(len([s for n in plan.role(role) for s in n.servers]) > 1 for role in SERVER_ROLES)


def _log_command(slot: list[ServerLaunch], shared: bool) -> str:
    """The container's wrapper: its output appended to its log file, then its args exec'd. All pods of a
    StatefulSet share one template, so in the shared folder the pod's name picks the plan's log name of
    the server this container is on that pod."""
    if not shared:
        return f'exec > >(tee -a /logs/{_log_name(slot[0])}.log) 2>&1; exec "$0" "$@"'
    cases = " ".join(f"{statefulset_name(s.role)}-{s.node}) log={s.log_name};;" for s in slot)
    return (f'case "$POD_NAME" in {cases} *) echo "pod $POD_NAME is not in the launch plan" >&2; exit 2;; esac; '
            'exec > >(tee -a "/logs/$log") 2>&1; exec "$0" "$@"')


def cluster_env(eng: ServingEngine) -> tuple[str, ...]:
    """The variables of a server's plan environment that the cluster decides instead."""
    return (eng.host_ip_env, *GPU_ENV)


def _env(server: ServerLaunch, eng: ServingEngine) -> list[dict]:
    env = [{"name": eng.host_ip_env, "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}]
    env += [{"name": k, "value": v} for k, v in server.env.items() if k not in cluster_env(eng)]
    return env + [{"name": "PYTHONUNBUFFERED", "value": "1"}]


def _ports(server: ServerLaunch) -> list[dict]:
    return ([{"name": f"http-{server.index}", "containerPort": server.port}]
            + ([{"name": f"bootstrap-{server.index}", "containerPort": server.bootstrap_port}] if server.bootstrap_port else []))


def _server_container(server: ServerLaunch, cluster: Cluster, log_command: str, shared: bool, eng: ServingEngine) -> dict:
    limits = {GPU_RESOURCE: len(server.gpus)}
    if cluster.rdma_resource:
        limits[cluster.rdma_resource] = 1
    return {
        "name": _log_name(server),
        "image": cluster.image,
        # Output also appended to the shared volume, where the sweep reads it.
        "command": ["bash", "-c", log_command],
        "args": list(server.argv),
        "env": _env(server, eng),
        "ports": _ports(server),
        "resources": {"limits": limits},
        "securityContext": {"privileged": False, "capabilities": {"add": ["IPC_LOCK"]}},
        # Started once the engine's first health path passes (it generates a token); ready while its last,
        # cheapest one does.
        "startupProbe": {"httpGet": {"path": eng.worker_health_paths[0], "port": server.port},
                         "periodSeconds": PROBE_PERIOD, "timeoutSeconds": 60,
                         "failureThreshold": SERVER_START_SECONDS // PROBE_PERIOD},
        "readinessProbe": {"httpGet": {"path": eng.worker_health_paths[-1], "port": server.port}, "periodSeconds": 30,
                           "timeoutSeconds": 10},
        "volumeMounts": [
            {"name": "model", "mountPath": cluster.model_path, "readOnly": True},
            {"name": "ib-devices", "mountPath": cluster.ib_devices_file, "readOnly": True},
            {"name": "shm", "mountPath": "/dev/shm"},
            # One folder for all servers (logs/prefill-1.log), or one per pod (logs/<pod>/prefill.log).
            {"name": "shared", "mountPath": "/logs", **({"subPath": "logs"} if shared else {"subPathExpr": "logs/$(POD_NAME)"})},
        ],
    }


def _role_objects(role: str, nodes: tuple[NodeLaunch, ...], cluster: Cluster, shared: bool,
                  eng: ServingEngine) -> list[dict]:
    name = statefulset_name(role)
    servers = nodes[0].servers
    ports = [{"name": p["name"], "port": p["containerPort"]} for s in servers
             for p in _ports(s)]
    service = {"apiVersion": "v1", "kind": "Service", "metadata": _meta(name, cluster, role),
               # Headless: each pod gets a stable name; resolvable before it is ready,
               # since the other side's bootstrap may need it early.
               "spec": {"clusterIP": "None", "publishNotReadyAddresses": True, "selector": _labels(role), "ports": ports}}
    containers = []
    for server in servers:
        c = _server_container(server, cluster, _log_command([n.servers[server.index] for n in nodes], shared), shared, eng)
        c["env"].insert(0, {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}})
        containers.append(c)
    pod = {
        "hostNetwork": True,
        "dnsPolicy": "ClusterFirstWithHostNet",
        "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
            # One server pod per node, prefill and decode alike, as on bare metal.
            "labelSelector": {"matchExpressions": [
                {"key": "app.kubernetes.io/name", "operator": "In", "values": [APP]},
                {"key": "app.kubernetes.io/component", "operator": "In", "values": ["prefill", "decode"]}]},
            "topologyKey": "kubernetes.io/hostname"}]}},
        "terminationGracePeriodSeconds": 60,
        "containers": containers,
        "volumes": [
            {"name": "model", "hostPath": {"path": cluster.model_path, "type": "Directory"}},
            {"name": "ib-devices", "hostPath": {"path": cluster.ib_devices_file, "type": "File"}},
            {"name": "shm", "emptyDir": {"medium": "Memory"}},
            {"name": "shared", "persistentVolumeClaim": {"claimName": cluster.shared_claim}},
        ],
    }
    statefulset = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": _meta(name, cluster, role),
                   "spec": {"serviceName": name, "replicas": len(nodes), "podManagementPolicy": "Parallel",
                            "selector": {"matchLabels": _labels(role)},
                            "template": {"metadata": {"labels": _labels(role)}, "spec": pod}}}
    return [service, statefulset]


def _router_objects(plan: LaunchPlan, cluster: Cluster) -> list[dict]:
    name = f"{APP}-router"
    container = {
        "name": "router", "image": cluster.image,
        "command": list(plan.router_argv),
        "env": [{"name": "PYTHONUNBUFFERED", "value": "1"}],
        "ports": [{"name": "http", "containerPort": plan.router_port}],
        # Ready once the router sees healthy workers; /health would pass with none.
        "readinessProbe": {"httpGet": {"path": engine(plan.engine).router_health_paths[0], "port": plan.router_port},
                           "periodSeconds": 10, "timeoutSeconds": 5},
        "livenessProbe": {"httpGet": {"path": "/liveness", "port": plan.router_port}, "periodSeconds": 30, "timeoutSeconds": 5},
        "securityContext": {"privileged": False},
    }
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": _meta(name, cluster, "router"),
                  "spec": {"replicas": 1, "selector": {"matchLabels": _labels("router")},
                           "template": {"metadata": {"labels": _labels("router")}, "spec": {"containers": [container]}}}}
    service = {"apiVersion": "v1", "kind": "Service", "metadata": _meta(name, cluster, "router"),
               "spec": {"selector": _labels("router"),
                        "ports": [{"name": "http", "port": plan.router_port, "targetPort": "http"}]}}
    return [deployment, service]


def router_url(plan: LaunchPlan) -> str:
    return url(f"{APP}-router", plan.router_port)


def job_script(plan: LaunchPlan, cluster: Cluster) -> str:
    """`pdrepro repro` (sweep, analyze, gates); the run folder lands on the shared volume."""
    prefill, decode = plan.role("prefill")[0].servers[0], plan.role("decode")[0].servers[0]
    # The pod name: unique per Job run, and free of $(...), which Kubernetes would expand.
    run = cluster.run_dir or "/shared/runs/$HOSTNAME"
    repro = ["pdrepro", "repro", "--scenario", f"{SCENARIO_DIR}/scenario.yaml", "--router", router_url(plan),
             "--prefill", prefill.url, "--decode", decode.url,
             "--model-path", cluster.model_path, "--dataset-path", cluster.dataset_path,
             *(["--logs-from", "/shared/logs"] if shared_log_folder(plan) else
               ["--logs-from", f"/shared/logs/{statefulset_name('decode')}-0",
                "--prefill-logs-from", f"/shared/logs/{statefulset_name('prefill')}-0"]),
             # The Job already runs in the GPU image: no engine to start the client in.
             "--bench-in-place",
             # The gates from their ConfigMap; an image without pytest is judged by `pdrepro check`.
             "--gates", "/gates"]
    if cluster.configuration:
        repro += ["--configuration", cluster.configuration]
    return "\n".join([
        "set -uo pipefail",
        f'run="{run}"',
        f'{shlex.join(repro)} --out "$run"; status=$?',
        ('echo "run folder: $run (on the shared volume)"' if not cluster.run_dir else
         f'echo "run folder: $run ({run_subpath(cluster.run_dir)} on the shared claim {cluster.shared_claim})"'),
        'exit "$status"',
    ])


def _job(plan: LaunchPlan, cluster: Cluster) -> dict:
    name = f"{APP}-sweep"
    container = {
        "name": "sweep", "image": cluster.image,
        "command": ["bash", "-c", job_script(plan, cluster)],
        "securityContext": {"privileged": False},
        "volumeMounts": [
            {"name": "model", "mountPath": cluster.model_path, "readOnly": True},
            {"name": "dataset", "mountPath": cluster.dataset_path, "readOnly": True},
            {"name": "shared", "mountPath": "/shared"},
            {"name": "gates", "mountPath": "/gates", "readOnly": True},
            {"name": "scenario", "mountPath": SCENARIO_DIR, "readOnly": True},
            *([{"name": "shared", "mountPath": cluster.run_dir, "subPath": run_subpath(cluster.run_dir)}]
              if cluster.run_dir else []),
        ],
    }
    pod = {
        "restartPolicy": "Never",
        # On a GPU node of the stack, where the model and the dataset are.
        "affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
            "labelSelector": {"matchLabels": _labels("decode")}, "topologyKey": "kubernetes.io/hostname"}]}},
        "containers": [container],
        "volumes": [
            {"name": "model", "hostPath": {"path": cluster.model_path, "type": "Directory"}},
            {"name": "dataset", "hostPath": {"path": cluster.dataset_path, "type": "File"}},
            {"name": "shared", "persistentVolumeClaim": {"claimName": cluster.shared_claim}},
            # repro/'s conftest.py and test_gates.py: kubectl create configmap pdrepro-gates --from-file=repro/
            {"name": "gates", "configMap": {"name": f"{APP}-gates"}},
            {"name": "scenario", "configMap": {"name": f"{APP}-scenario"}},
        ],
    }
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": _meta(name, cluster, "sweep"),
            "spec": {"backoffLimit": 0, "template": {"metadata": {"labels": _labels("sweep")}, "spec": pod}}}


def manifests(plan: LaunchPlan, cluster: Cluster) -> dict[str, list[dict]]:
    """File name -> the objects it holds, in the order `kubectl apply` should meet them."""
    claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": _meta(cluster.shared_claim, cluster, "shared"),
             "spec": {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "20Gi"}}}}
    scenario = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": _meta(f"{APP}-scenario", cluster, "sweep"),
                "data": {"scenario.yaml": cluster.scenario_yaml}}
    return {
        "00-namespace.yaml": [{"apiVersion": "v1", "kind": "Namespace",
                               "metadata": {"name": cluster.namespace, "labels": _labels("namespace")}}],
        "10-shared-claim.yaml": [claim],
        "20-prefill.yaml": _role_objects("prefill", plan.role("prefill"), cluster, shared_log_folder(plan), engine(plan.engine)),
        "30-decode.yaml": _role_objects("decode", plan.role("decode"), cluster, shared_log_folder(plan), engine(plan.engine)),
        "40-router.yaml": _router_objects(plan, cluster),
        "50-sweep-job.yaml": [scenario, _job(plan, cluster)],
    }


class _Dumper(yaml.SafeDumper):
    pass


def _str(dumper, value: str):
    # Scripts and the scenario file stay readable as literal blocks.
    block = "\n" in value and not any(line != line.rstrip() for line in value.splitlines())
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if block else None)


_Dumper.add_representer(str, _str)


def dump(objects: list[dict]) -> str:
    return yaml.dump_all(objects, Dumper=_Dumper, sort_keys=False, width=120)


def steps_text(plan: LaunchPlan, cluster: Cluster, out: str) -> str:
    ns = cluster.namespace
    return "\n".join([
        f"# {plan.scenario} ({plan.topology}) on Kubernetes, namespace {ns}",
        f"$ kubectl apply -f {out}/00-namespace.yaml -f {out}/10-shared-claim.yaml",
        "# the gates the Job runs, from a checkout of this bundle:",
        f"$ kubectl -n {ns} create configmap {APP}-gates --from-file=repro/",
        f"$ kubectl apply -f {out}/20-prefill.yaml -f {out}/30-decode.yaml -f {out}/40-router.yaml",
        *(f"$ kubectl -n {ns} rollout status statefulset/{statefulset_name(role)} --timeout={SERVER_START_SECONDS}s"
          for role in SERVER_ROLES),
        f"$ kubectl -n {ns} wait --for=condition=Available deployment/{APP}-router --timeout=600s",
        f"$ kubectl apply -f {out}/50-sweep-job.yaml",
        f"$ kubectl -n {ns} logs -f job/{APP}-sweep",
        "",
    ])


_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_RESOURCE = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")


class K8sTarget:
    """Manifests for `kubectl apply`, and the steps to apply them (steps.txt)."""

    name = "k8s"

    def hosts(self, scenario: Scenario, options) -> Hosts:
        for option, value in (("--namespace", options.namespace), ("--shared-claim", options.shared_claim)):
            if not _DNS_LABEL.match(value or ""):
                raise UserError(f"{option} {value!r}: not a Kubernetes name; use lower-case letters, digits and '-' (at most 63)")
        rdma = options.rdma_resource
        if rdma != "none" and not _RESOURCE.match(rdma):
            raise UserError(f"--rdma-resource {rdma!r}: expected a device-plugin resource such as rdma/hca, or none")
        t = scenario.topology
        return (tuple(pod_host("prefill", i) for i in range(t.prefill.nodes)),
                tuple(pod_host("decode", i) for i in range(t.decode.nodes)))

    def render(self, plan: Plan, options, out: str) -> Rendered:
        site, scenario = plan.site, plan.scenario
        if site.ib_devices_file is None:
            raise UserError("--target k8s mounts the GPU-to-NIC map on every node; give --ib-devices FILE")
        lp = plan.launch_plan()
        cluster = Cluster(namespace=options.namespace, image=site.image, model_path=site.model_path,
                          dataset_path=site.dataset_path, ib_devices_file=site.ib_devices_file,
                          rdma_resource=None if options.rdma_resource == "none" else options.rdma_resource,
                          shared_claim=options.shared_claim,
                          # The scenario file as written (load_scenario has read it already).
                          scenario_yaml=resolve_path(options.scenario).read_text(),
                          configuration=scenario.launched_configuration(lp.topology),
                          run_dir=getattr(options, "run_dir", None))
        files = {name: dump(objects) for name, objects in manifests(lp, cluster).items()}
        text = steps_text(lp, cluster, out)
        files["steps.txt"] = text
        return Rendered(files=files, commands=text)


TARGET = K8sTarget()
