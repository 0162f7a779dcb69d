"""The SLURM target: one sbatch script that runs a scenario on an allocation.

The script takes the allocation's node list in order (``scontrol show
hostnames``): the first P nodes serve prefill, the next D decode, and the
router runs on the first decode node. Each server is a background job step
(``srun --overlap``) running the plan's argv through a container runtime
(Docker by default; pyxis/enroot or software installed on the nodes as
options); the script waits for the router's /readiness, runs `pdrepro repro` (sweep,
analysis, gates), and stops every step on exit, error or ``scancel``.

Node addresses are known only inside the allocation, so the plan is built
with shell references (``${PREFILL_IPS[0]}``...) as hosts; the script fills
them in before the first server starts. The argv words are the plan's own.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path, PurePath
from typing import TYPE_CHECKING

from ...core.errors import UserError
from ...core.roles import SERVER_ROLES, Role
from ..plan import SERVER_START_SECONDS
from .base import Hosts, Rendered
from .templating import fill

if TYPE_CHECKING:
    from ...scenario.model import Scenario
    from ..plan import LaunchPlan, Plan

RUNTIMES = ("docker", "pyxis", "host")
DEFAULT_TIME = "04:00:00"
# Words that name the script's own variables are expanded; any other "$" is literal.
_SCRIPT_VAR = re.compile(r"\$\{?(PREFILL_IPS|DECODE_IPS|ROUTER_IP|JOB_DIR|IMAGE|BUNDLE)\b")


def host_ref(role: str, node: int) -> str:
    return f"${{{role.upper()}_IPS[{node}]}}"


def node_ref(role: str, node: int) -> str:
    return f"${{{role.upper()}_NODES[{node}]}}"


def word(text: str) -> str:
    """One shell word: double-quoted when it refers to a script variable."""
    if _SCRIPT_VAR.search(text):
        if any(c in text for c in '"`\\\n') or "$(" in text:
            raise ValueError(f"cannot quote {text!r} for the sbatch script")
        return f'"{text}"'
    return shlex.quote(text)


@dataclass(frozen=True)
class Step:
    """One command of the job: where it runs, its environment and argv."""

    name: str
    node: str                       # a node reference, or "-" for the batch shell
    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()
    kind: str = "plain"             # gpu: a server needing GPUs and RDMA devices
    on_failure: str = "stop"        # stop | continue (the gates still run after a failed sweep)


@dataclass(frozen=True)
class Job:
    name: str
    title: str
    prefill_nodes: int
    decode_nodes: int
    servers: tuple[Step, ...]
    ready_url: str
    client: tuple[Step, ...]
    settings: tuple[tuple[str, str, str], ...]     # variable, default, comment
    gres: str | None = None
    time: str = DEFAULT_TIME
    mounts: tuple[str, ...] = ()
    log_aliases: tuple[tuple[str, str], ...] = ()  # (server's log file, the plan's log name for it)
    pair_scenario: str | None = None  # record both nodes and check the pair before any server starts


def _command(head: str, step: Step) -> str:
    """``launch``/``step`` line: one flag per line, as an operator would read it."""
    first = [head, word(step.name), step.node if step.node == "-" else f'"{step.node}"']
    if head == "launch":
        first.append(step.kind)
    lines = [" ".join(first)]
    lines += [f"{k}={word(v)}" for k, v in step.env]
    words = ["--", *(word(a) for a in step.argv)]
    chunk: list[str] = []
    for w, raw in zip(words, ["--", *step.argv]):
        if raw.startswith("--") and chunk:
            lines.append(" ".join(chunk))
            chunk = []
        chunk.append(w)
    lines.append(" ".join(chunk))
    return " \\\n    ".join(lines)


def _placement(job: Job) -> str:
    p, d = job.prefill_nodes, job.decode_nodes
    return "\n".join([
        "# ---- Placement: the allocation's nodes in order ----",
        'mapfile -t NODES < <(scontrol show hostnames "$SLURM_JOB_NODELIST")',
        f'[ "${{#NODES[@]}}" -ge {p + d} ] || pd_fail "the allocation has ${{#NODES[@]}} node(s); '
        f'this scenario needs {p + d} ({p} prefill, {d} decode): sbatch --nodes={p + d}"',
        f'PREFILL_NODES=("${{NODES[@]:0:{p}}}")',
        f'DECODE_NODES=("${{NODES[@]:{p}:{d}}}")',
        'ROUTER_NODE=${DECODE_NODES[0]}',
        "PREFILL_IPS=() DECODE_IPS=()",
        'for n in "${PREFILL_NODES[@]}"; do PREFILL_IPS+=("$(node_ip "$n")"); done',
        'for n in "${DECODE_NODES[@]}"; do DECODE_IPS+=("$(node_ip "$n")"); done',
        'ROUTER_IP=${DECODE_IPS[0]}',
        'mkdir -p "$JOB_DIR/logs"',
        *(f'ln -sfn {src} "$JOB_DIR/logs/{alias}"' for src, alias in job.log_aliases),
        'pd_log "prefill: ${PREFILL_NODES[*]} (${PREFILL_IPS[*]}); decode: ${DECODE_NODES[*]} '
        '(${DECODE_IPS[*]}); router: $ROUTER_NODE ($ROUTER_IP); runtime $RUNTIME; job folder $JOB_DIR"',
    ])


def _pair_check(job: Job) -> str:
    """The first node of each role records itself (`pdrepro doctor --out`, whatever its verdict); the two records
    are held against each other and a disagreement stops the job before a server loads its model."""
    if job.pair_scenario is None:
        return ""
    scenario = word(job.pair_scenario)
    pair = Step("pair-check", "-", ("$BUNDLE/.venv/bin/pdrepro", "doctor", "--pair", "$JOB_DIR/nodes/prefill.json",
                                    "$JOB_DIR/nodes/decode.json", "--scenario", job.pair_scenario))
    return "\n".join([
        "", "",
        "# ---- Node records and the pair check, before any server starts ----",
        'mkdir -p "$JOB_DIR/nodes"',
        f'node_record prefill "${{PREFILL_NODES[0]}}" {scenario}',
        f'node_record decode "${{DECODE_NODES[0]}}" {scenario}',
        f'{_command("step", pair)} \\\n    || {{ rc=$?; pd_log "the pair check refused the launch (exit $rc)"; exit "$rc"; }}',
    ])


def _client(job: Job) -> str:
    out = ["# ---- Client steps ----", "status=0"]
    for s in job.client:
        cmd = _command("step", s)
        if s.on_failure == "continue":
            out.append(f"{cmd} \\\n    || status=$?")
        else:
            out.append(f'{cmd} \\\n    || {{ rc=$?; pd_log "{s.name} failed (exit $rc)"; exit "$rc"; }}')
    out.append('exit "$status"')
    return "\n".join(out)


def render(job: Job) -> str:
    """The sbatch script: templates/slurm-job.sbatch.tmpl with the job's settings, placement and steps."""
    settings = []
    for var, default, comment in job.settings:
        line = f'{var}=${{{var}:-{default}}}'
        settings.append(f"{line:<44} # {comment}" if comment else line)
    return fill("slurm-job.sbatch.tmpl", title=job.title, job_name=job.name,
                nodes=str(job.prefill_nodes + job.decode_nodes), time=job.time,
                gres=f"#SBATCH --gres={job.gres}" if job.gres else "",
                settings="\n".join(settings), mounts=" ".join(word(m) for m in job.mounts),
                runtime=files("pdrepro.launch.targets").joinpath("slurm_runtime.sh").read_text().rstrip("\n"),
                placement=_placement(job) + _pair_check(job), servers="\n".join(_command("launch", s) for s in job.servers),
                ready_url=word(job.ready_url), client=_client(job))


# ---- the GPU job from the launch plan ----------------------------------------

def symbolic_hosts(scenario) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The hosts a Site gets for this target: the script's address variables."""
    t = scenario.topology
    return (tuple(host_ref("prefill", i) for i in range(t.prefill.nodes)),
            tuple(host_ref("decode", i) for i in range(t.decode.nodes)))


def gpu_job(plan: Plan, lp: LaunchPlan | None = None, run_dir: str | None = None,
            scenario_file: str | None = None) -> Job:
    """``run_dir``: where `pdrepro repro` writes its run (an A/B arm's folder), else $JOB_DIR/run.
    ``scenario_file``: the scenario YAML the job's `pdrepro repro` reads (an A/B arm's variant, which shares
    its name with the shipped scenario it varies), else the scenario by its name."""
    from ..plan import url

    lp = lp or plan.launch_plan()
    site, scenario = plan.site, plan.scenario
    servers = [Step(s.name, node_ref(s.role, s.node), s.argv, tuple(s.env.items()), kind="gpu") for s in lp.servers]
    servers.append(Step("router", "$ROUTER_NODE", lp.router_argv))
    ports = plan.launch.ports
    first = {role: lp.role(role)[0].servers[0] for role in SERVER_ROLES}
    # The one pipeline (`pdrepro repro`: sweep, analyze, gates, first failing status) from the bundle's checkout.
    repro: tuple[str, ...] = (
        "$BUNDLE/.venv/bin/pdrepro", "repro", "--scenario", scenario_file or scenario.name,
        "--router", url("${ROUTER_IP}", ports.router),
        "--prefill", first[Role.PREFILL].url, "--decode", first[Role.DECODE].url,
        "--model-path", site.model_path, "--dataset-path", site.dataset_path, "--image", "$IMAGE",
        "--logs-from", "$JOB_DIR/logs", "--out", run_dir or "$JOB_DIR/run",
        "--gates", "$BUNDLE/repro/", "--pytest", "$BUNDLE/.venv/bin/pytest",
        # The records the job wrote before the servers started: kept in the run and checked again there.
        "--node-record", "$JOB_DIR/nodes/prefill.json", "--node-record", "$JOB_DIR/nodes/decode.json")
    configuration = scenario.launched_configuration(lp.topology)
    if configuration is not None:
        # This job runs the disaggregated configuration; the regular one is not placed here.
        repro += ("--configuration", configuration)
    client = (Step("repro", "-", repro),)
    t = scenario.topology
    per_node = max(t.prefill.servers_per_node * plan.tp("prefill"), t.decode.servers_per_node * plan.tp("decode"))
    settings = (
        ("RUNTIME", "docker", "docker | pyxis | host"),
        ("IMAGE", site.image, "GPU image (docker/versions.env GPU_IMAGE)"),
        ("NET_IFACE", "", "netdev whose IPv4 the servers advertise; empty: the node name's address"),
        ("BUNDLE", "$SLURM_SUBMIT_DIR", "this bundle's checkout with .venv, on a shared filesystem"),
        ("JOB_DIR", "$SLURM_SUBMIT_DIR/runs/slurm-$SLURM_JOB_ID", "logs/ and run/ of this job, shared"),
        ("MEMLOCK", str(site.memlock), "locked-memory limit of the servers, bytes; -1 = unlimited"),
        ("READY_TIMEOUT_S", str(SERVER_START_SECONDS), "loading a large model takes many minutes"),
        ("STOP_GRACE_S", "60", "seconds the servers get to stop before they are killed"),
    )
    return Job(
        name=f"pdrepro-{scenario.name}",
        title=f"pdrepro: scenario {scenario.name} ({lp.topology}) as one SLURM job",
        prefill_nodes=t.prefill.nodes, decode_nodes=t.decode.nodes,
        servers=tuple(servers), ready_url=url("${ROUTER_IP}", ports.router) + "/readiness",
        client=client, settings=settings, gres=f"gpu:{per_node}",
        mounts=_carried(site.model_path, site.dataset_path, site.ib_devices_file),
        # Steps log to <step>.log; the sweep reads every server's log under the plan's name for it
        # (prefill.log, prefill-1.log, ...), which a step of one server per node may already carry.
        log_aliases=tuple((f"{s.name}.log", s.log_name) for s in lp.servers if s.log_name != f"{s.name}.log"),
        pair_scenario=scenario_file or scenario.name,
    )


def _carried(*paths: str | None) -> tuple[str, ...]:
    """The paths the job bind-mounts, each one both runtimes can carry. pyxis takes one comma-separated
    --container-mounts list of SRC:DST[:FLAGS] and Docker's -v is SRC:DST[:FLAGS]: a comma would split the path
    into two mounts, a colon cut it short, and neither can be escaped. The runtime is chosen at sbatch time, so
    the script is refused here rather than a job failing (or mounting the wrong folder) on the nodes."""
    for path in paths:
        if path and ("," in path or ":" in path):
            bad = "a comma" if "," in path else "a colon"
            raise UserError(f"{path}: holds {bad}, which a SLURM job cannot bind-mount (pyxis's --container-mounts "
                            "list and Docker's -v split on it); move or link it to a path without ',' or ':' and "
                            "render again")
    return tuple(p for p in paths if p)


class SlurmTarget:
    """One sbatch script running the plan on an allocation (the script finds the node addresses)."""

    name = "slurm"

    def hosts(self, scenario: Scenario, options) -> Hosts:
        return symbolic_hosts(scenario)

    def render(self, plan: Plan, options, out: str) -> Rendered:
        run_dir = getattr(options, "run_dir", None)
        given = getattr(options, "scenario", None)
        # A scenario given as a file is read from that file on the nodes (the shared filesystem), not by its name.
        scenario_file = str(Path(given).absolute()) if given and Path(given).is_file() else None
        job = gpu_job(plan, run_dir=run_dir, scenario_file=scenario_file)
        name = f"{plan.scenario.name}.sbatch"
        return Rendered(
            files={name: render(job)}, executable=frozenset({name}),
            wrote=f": {job.prefill_nodes} prefill + {job.decode_nodes} decode node(s), router on the first decode node",
            notes=(f"submit from the bundle's checkout on a shared filesystem: sbatch {PurePath(out, name)}",
                   "runtime: Docker on each node (default); sbatch --export=ALL,RUNTIME=pyxis for enroot/pyxis",
                   f"the run folder: {run_dir or '$JOB_DIR/run'} (the server logs stay in $JOB_DIR/logs)"))


TARGET = SlurmTarget()
