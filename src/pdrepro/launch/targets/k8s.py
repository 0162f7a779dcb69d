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

Each manifest is written from its template in ``templates/`` (k8s-*.yaml.tmpl: what every stack's object
of that kind holds the same way); what differs (argv, environment, ports, paths, names) comes from the
launch plan and the cluster options, each value through templating's YAML writers, so a hostile word
still reads back as itself. No argv is written here or in a template: each is the plan's, word for word.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import PurePosixPath

from ...core.errors import UserError
from ...core.roles import SERVER_ROLES
from ...engines import ServingEngine, engine
from ...scenario.model import Scenario, resolve_path
from ..plan import SERVER_START_SECONDS, LaunchPlan, NodeLaunch, Plan, ServerLaunch, url
from .base import Hosts, Rendered
from .templating import fill, log_wrapper, yaml_list, yaml_scalar, yaml_text

APP = "pdrepro"
# The shared volume's request: server logs and run folders.
CLAIM_SIZE = "20Gi"
# The GPU env the plan sets that the cluster decides instead (see the module doc); the engine's
# host-address variable too (cluster_env).
GPU_ENV = ("CUDA_DEVICE_ORDER", "CUDA_VISIBLE_DEVICES")
PROBE_PERIOD = 15
NODES_DIR = "/shared/nodes"  # the node records the server pods write before they start
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


def _log_name(server: ServerLaunch) -> str:
    # The container's name in its pod; further servers of a node add their index.
    return server.role if server.index == 0 else f"{server.role}-{server.index}"


def shared_log_folder(plan: LaunchPlan) -> bool:
    """Whether every server writes into one folder of the shared volume (logs/), under its plan log name:
    so when a role has several servers, for the sweep to read all of them from one place. A stack of one
    server per role keeps a folder per pod (logs/<pod>/prefill.log), as it always has."""
    return any(len([s for n in plan.role(role) for s in n.servers]) > 1 for role in SERVER_ROLES)


def _log_command(slot: list[ServerLaunch], shared: bool) -> str:
    """The container's wrapper (templating.log_wrapper): its output appended to its log file, its args run as its
    server. All pods of a StatefulSet share one template, so in the shared folder the pod's name picks the plan's
    log name of the server this container is on that pod."""
    if not shared:
        return log_wrapper(f"/logs/{_log_name(slot[0])}.log")
    cases = " ".join(f"{statefulset_name(s.role)}-{s.node}) log={s.log_name};;" for s in slot)
    return (f'case "$POD_NAME" in {cases} *) echo "pod $POD_NAME is not in the launch plan" >&2; exit 2;; esac; '
            + log_wrapper('"/logs/$log"'))


def cluster_env(eng: ServingEngine) -> tuple[str, ...]:
    """The variables of a server's plan environment that the cluster decides instead."""
    return (eng.host_ip_env, *GPU_ENV)


# Kubernetes expands `$(NAME)` and reduces `$$` to `$` in a container's command, args and env values: a `$`
# that starts either is doubled, so every word reaches the process as the plan has it (any other `$` is kept).
_EXPANDED = re.compile(r"\$(?=[$(])")


def unexpanded(word: str) -> str:
    """WORD as a command, args or env value must be written for Kubernetes to pass it on unchanged."""
    return _EXPANDED.sub("$$", word)


def _meta(name: str, cluster: Cluster, component: str) -> dict[str, str]:
    """The placeholders of an object's metadata and its selector: what every template's head takes."""
    return {"name": yaml_scalar(name), "namespace": yaml_scalar(cluster.namespace), "app": yaml_scalar(APP),
            "component": yaml_scalar(component)}


def _env(server: ServerLaunch, eng: ServingEngine) -> str:
    """The plan's environment of SERVER, less what the cluster decides, as `env` entries."""
    return "\n".join(f"        - name: {yaml_scalar(k)}\n          value: {yaml_scalar(unexpanded(v))}"
                     for k, v in server.env.items() if k not in cluster_env(eng))


def _ports(server: ServerLaunch) -> list[tuple[str, int]]:
    return ([(f"http-{server.index}", server.port)]
            + ([(f"bootstrap-{server.index}", server.bootstrap_port)] if server.bootstrap_port else []))


def _server_container(server: ServerLaunch, cluster: Cluster, log_command: str, shared: bool, eng: ServingEngine) -> str:
    ports = "\n".join(f"        - name: {yaml_scalar(name)}\n          containerPort: {port}" for name, port in _ports(server))
    return fill(
        "k8s-server-container.yaml.tmpl", container=yaml_scalar(_log_name(server)), image=yaml_scalar(cluster.image),
        # Output also appended to the shared volume, where the sweep reads it; then the plan's argv exec'd.
        log_command=yaml_scalar(unexpanded(log_command)), args=yaml_list([unexpanded(w) for w in server.argv], indent=8),
        host_ip_env=yaml_scalar(eng.host_ip_env),
        env=_env(server, eng), ports=ports, gpus=str(len(server.gpus)),
        rdma_limit=f"            {yaml_scalar(cluster.rdma_resource)}: 1" if cluster.rdma_resource else "",
        # Started once the engine's first health path passes (it generates a token); ready while its last,
        # cheapest one does.
        startup_path=yaml_scalar(eng.worker_health_paths[0]), ready_path=yaml_scalar(eng.worker_health_paths[-1]),
        port=str(server.port), probe_period=str(PROBE_PERIOD), startup_failures=str(SERVER_START_SECONDS // PROBE_PERIOD),
        model_path=yaml_scalar(cluster.model_path), ib_devices_file=yaml_scalar(cluster.ib_devices_file),
        # One folder for all servers (logs/prefill-1.log), or one per pod (logs/<pod>/prefill.log).
        log_mount="subPath: logs" if shared else "subPathExpr: logs/$(POD_NAME)")


def _record_container(role: str, server: ServerLaunch, cluster: Cluster, scenario: str, eng: ServingEngine) -> str:
    """Before the server starts, the pod's node writes its record (`pdrepro doctor --out`, whatever the verdict) to
    the shared volume, with the server's own environment and the image's Python; the sweep Job keeps the first
    pod's of each role in its run and checks the pair before the sweep. No record at all stops the pod."""
    record = f'"{NODES_DIR}/$POD_NAME.json"'
    script = (f"mkdir -p {NODES_DIR} && pdrepro doctor --role {role} --scenario {shlex.quote(scenario)} "
              f"--python python3 --out {record}; test -s {record}")
    env = _env(server, eng)
    return "\n".join([
        "      - name: node-record", f"        image: {yaml_scalar(cluster.image)}",
        "        command:", "        - bash", "        - -c", f"        - {yaml_scalar(unexpanded(script))}",
        "        env:", "        - name: POD_NAME", "          valueFrom:", "            fieldRef:",
        "              fieldPath: metadata.name", *([env] if env else []),
        "        volumeMounts:", "        - name: shared", "          mountPath: /shared"])


def _role_objects(role: str, nodes: tuple[NodeLaunch, ...], cluster: Cluster, shared: bool,
                  eng: ServingEngine, scenario: str) -> list[str]:
    """The headless Service (each pod a stable name, resolvable before it is ready, since the other side's
    bootstrap may need it early) and the StatefulSet: one pod per node, prefill and decode alike kept apart
    by pod anti-affinity, as on bare metal."""
    name = statefulset_name(role)
    servers = nodes[0].servers
    meta = _meta(name, cluster, role)
    ports = "\n".join(f"  - name: {yaml_scalar(port_name)}\n    port: {port}" for s in servers for port_name, port in _ports(s))
    service = fill("k8s-headless-service.yaml.tmpl", **meta, ports=ports)
    containers = "".join(_server_container(server, cluster, _log_command([n.servers[server.index] for n in nodes], shared),
                                           shared, eng) for server in servers)
    statefulset = fill("k8s-statefulset.yaml.tmpl", **meta, replicas=str(len(nodes)),
                       server_roles=yaml_list(SERVER_ROLES, indent=16), containers=containers.rstrip("\n"),
                       init=_record_container(role, servers[0], cluster, scenario, eng),
                       model_path=yaml_scalar(cluster.model_path), ib_devices_file=yaml_scalar(cluster.ib_devices_file),
                       shared_claim=yaml_scalar(cluster.shared_claim))
    return [service, statefulset]


def _router_objects(plan: LaunchPlan, cluster: Cluster) -> list[str]:
    meta = _meta(f"{APP}-router", cluster, "router")
    # Ready once the router sees healthy workers; a plain health path would pass with none.
    eng = engine(plan.engine)
    deployment = fill("k8s-router-deployment.yaml.tmpl", **meta, image=yaml_scalar(cluster.image),
                      command=yaml_list([unexpanded(w) for w in plan.router_argv], indent=8), port=str(plan.router_port),
                      ready_path=yaml_scalar(eng.router_health_paths[0]),
                      live_path=yaml_scalar(eng.router_liveness_path))
    service = fill("k8s-router-service.yaml.tmpl", **meta, port=str(plan.router_port))
    return [deployment, service]


def router_url(plan: LaunchPlan) -> str:
    return url(f"{APP}-router", plan.router_port)


def job_script(plan: LaunchPlan, cluster: Cluster) -> str:
    """`pdrepro repro` (sweep, analyze, gates); the run folder lands on the shared volume."""
    prefill, decode = plan.role("prefill")[0].servers[0], plan.role("decode")[0].servers[0]
    # An A/B arm's folder, else the pod name: unique per Job run.
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
             "--gates", "/gates",
             # The records the first pod of each role wrote before its server started: the pair check runs first.
             *(w for role in SERVER_ROLES for w in ("--node-record", f"{NODES_DIR}/{statefulset_name(role)}-0.json"))]
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


def _job(plan: LaunchPlan, cluster: Cluster) -> str:
    """`pdrepro repro` on a GPU node of the stack (beside a decode pod), where the model and the dataset are;
    the gates from their ConfigMap (kubectl create configmap pdrepro-gates --from-file=repro/)."""
    return fill("k8s-sweep-job.yaml.tmpl", **_meta(f"{APP}-sweep", cluster, "sweep"), near=yaml_scalar("decode"),
                image=yaml_scalar(cluster.image), script=yaml_text(unexpanded(job_script(plan, cluster)), indent=10),
                model_path=yaml_scalar(cluster.model_path), dataset_path=yaml_scalar(cluster.dataset_path),
                shared_claim=yaml_scalar(cluster.shared_claim), scenario_dir=yaml_scalar(SCENARIO_DIR),
                gates_map=yaml_scalar(f"{APP}-gates"), scenario_map=yaml_scalar(f"{APP}-scenario"),
                # An A/B arm's run folder: its own folder of the shared claim, mounted where the script writes.
                run_mount=(f"        - name: shared\n          mountPath: {yaml_scalar(cluster.run_dir)}\n"
                           f"          subPath: {yaml_scalar(run_subpath(cluster.run_dir))}") if cluster.run_dir else "")


def manifests(plan: LaunchPlan, cluster: Cluster) -> dict[str, str]:
    """File name -> its text, one YAML document per object, in the order `kubectl apply` should meet them."""
    eng, shared = engine(plan.engine), shared_log_folder(plan)
    namespace = fill("k8s-namespace.yaml.tmpl", namespace=yaml_scalar(cluster.namespace), app=yaml_scalar(APP),
                     component=yaml_scalar("namespace"))
    claim = fill("k8s-claim.yaml.tmpl", **_meta(cluster.shared_claim, cluster, "shared"), storage=CLAIM_SIZE)
    # The scenario file as written, for `pdrepro repro` in the Job.
    scenario = fill("k8s-scenario-configmap.yaml.tmpl", **_meta(f"{APP}-scenario", cluster, "sweep"),
                    scenario=yaml_text(cluster.scenario_yaml, indent=4))
    objects = {
        "00-namespace.yaml": [namespace],
        "10-shared-claim.yaml": [claim],
        "20-prefill.yaml": _role_objects("prefill", plan.role("prefill"), cluster, shared, eng, plan.scenario),
        "30-decode.yaml": _role_objects("decode", plan.role("decode"), cluster, shared, eng, plan.scenario),
        "40-router.yaml": _router_objects(plan, cluster),
        "50-sweep-job.yaml": [scenario, _job(plan, cluster)],
    }
    return {name: "---\n".join(docs) for name, docs in objects.items()}


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
        files = manifests(lp, cluster)
        text = steps_text(lp, cluster, out)
        files["steps.txt"] = text
        return Rendered(files=files, commands=text)


TARGET = K8sTarget()
