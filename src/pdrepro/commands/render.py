"""``pdrepro render``: the launch of a scenario, placed by a target: compose
env files per node (default), Kubernetes manifests or a SLURM sbatch script. Every target renders
the same ``launch.LaunchPlan``."""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
from pathlib import Path

from .. import launch, siteinput
from ..errors import UserError
from ..scenario import load_scenario, resolve_path
from ..targets import compose, k8s, onebox

HELP = "write a scenario's launch for a target (compose env files per node, Kubernetes manifests, or a SLURM sbatch script)"


def register(subparsers) -> None:
    p = subparsers.add_parser("render", help=HELP, description=HELP[0].upper() + HELP[1:] + ".")
    p.add_argument("--target", choices=sorted(RENDERERS), default="compose",
                   help="where the launch runs (default %(default)s)")
    p.add_argument("--scenario", default="h20-qwen3-235b-1p1d",
                   help="shipped scenario name or path to a scenario YAML (default %(default)s)")
    p.add_argument("--prefill-ip", default=os.environ.get("PREFILL_IP"),
                   help="compose: RDMA-reachable address of each prefill node, comma-separated (the first also runs the "
                        "first regular instance); env PREFILL_IP")
    p.add_argument("--decode-ip", default=os.environ.get("DECODE_IP"),
                   help="compose: RDMA-reachable address of each decode node, comma-separated; "
                        "the first runs the router; env DECODE_IP")
    p.add_argument("--model", help="model folder on the nodes; checked here for config.json when given "
                   f"(default {launch.DEFAULT_MODEL_ROOT}/<model name>, not checked)")
    p.add_argument("--dataset",
                   help=f"ShareGPT JSON on the nodes; checked when given (default {launch.DEFAULT_DATASET}, not checked)")
    p.add_argument("--gpus",
                   help="compose: GPU ids per node, comma-separated (default 0..TP-1; servers sharing a node split them)")
    p.add_argument("--ib-devices", help="GPU-to-RDMA-device JSON (from `pdrepro ib-devices`), same path on the nodes; "
                   f"checked and copied into --out when given (default {launch.DEFAULT_IB_DEVICES}, not checked)")
    p.add_argument("--log-dir", default=launch.DEFAULT_LOG_DIR,
                   help="host folder on each node receiving the server logs (default %(default)s)")
    p.add_argument("--memlock", type=int, default=launch.MEMLOCK_UNLIMITED,
                   help="compose: locked-memory limit for the servers in bytes (default -1 = unlimited)")
    group = p.add_argument_group("Kubernetes (--target k8s)")
    group.add_argument("--namespace", default="pdrepro", help="namespace of every object (default %(default)s)")
    group.add_argument("--rdma-resource", default="rdma/hca",
                       help="device-plugin resource giving each server container the RDMA devices (one unit); 'none' "
                            "for a cluster without one (default %(default)s)")
    group.add_argument("--shared-claim", default="pdrepro-shared",
                       help="ReadWriteMany PersistentVolumeClaim (rendered) holding the server logs and the sweep's run "
                            "folder (default %(default)s)")
    p.add_argument("--out", default="deploy", help="folder for the rendered files (default %(default)s)")
    p.set_defaults(func=run)


def _abs(path: str) -> str:
    return str(Path(path).expanduser().absolute())


def build_site(args, scenario, prefill_hosts: tuple[str, ...], decode_hosts: tuple[str, ...]) -> launch.Site:
    if args.model:
        model = Path(args.model).expanduser()
        if not (model / "config.json").is_file():
            raise UserError(f"--model {args.model}: no config.json there; give the model's folder "
                            "(the one holding config.json and the weights)")
        model_path = _abs(args.model)
    else:
        model_path = f"{launch.DEFAULT_MODEL_ROOT}/{scenario.model.name}"
    if args.dataset:
        if not Path(args.dataset).expanduser().is_file():
            raise UserError(f"--dataset {args.dataset}: no such file; give the ShareGPT_V3_unfiltered_cleaned_split.json path")
        dataset = _abs(args.dataset)
    else:
        dataset = launch.DEFAULT_DATASET
    t = scenario.topology
    tps = [scenario.parallel.prefill_tp, scenario.parallel.decode_tp]
    if scenario.launch and scenario.launch.regular_tp:
        tps.append(scenario.launch.regular_tp)
    if args.gpus is not None:
        gpus = siteinput.parse_gpus(args.gpus)
    else:
        # Enough for the busiest node: servers sharing a node split its GPUs.
        per_host: dict[str, int] = {}
        for hosts, tp, per_node in ((prefill_hosts, tps[0], t.prefill.servers_per_node),
                                    (decode_hosts, tps[1], t.decode.servers_per_node)):
            for host in hosts:
                per_host[host] = per_host.get(host, 0) + tp * per_node
        regular = 2 * max(tps) if prefill_hosts[0] == decode_hosts[0] else max(tps)
        gpus = tuple(range(max(regular if len(tps) > 2 else 0, *per_host.values())))
    if args.ib_devices:
        siteinput.check_ib_devices(Path(args.ib_devices).expanduser(), max(tps))
        ib_devices = _abs(args.ib_devices)
    else:
        ib_devices = launch.DEFAULT_IB_DEVICES
    if args.memlock != launch.MEMLOCK_UNLIMITED and args.memlock < 1:
        raise UserError(f"--memlock {args.memlock}: give a byte count, or -1 for unlimited")
    if not args.log_dir or not args.log_dir.startswith("/"):
        raise UserError(f"--log-dir {args.log_dir!r}: give an absolute folder path on the nodes")
    return launch.Site(
        prefill_hosts=prefill_hosts, decode_hosts=decode_hosts, model_path=model_path, dataset_path=dataset,
        ib_devices_file=ib_devices, gpus=gpus, image=siteinput.gpu_image(), log_dir=args.log_dir, memlock=args.memlock,
    )


def _mkdir(out: Path, option: str) -> None:
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"{option} {out}: cannot create it ({exc.strerror}); choose a writable folder") from None


def _compose(args, scenario) -> int:
    t = scenario.topology
    prefill_ips = siteinput.parse_ips(args.prefill_ip, "--prefill-ip", t.prefill.nodes)
    decode_ips = siteinput.parse_ips(args.decode_ip, "--decode-ip", t.decode.nodes)
    siteinput.check_node_ips(prefill_ips, decode_ips)
    site = build_site(args, scenario, prefill_ips, decode_ips)
    plan = launch.Plan(scenario, site)
    files = compose.env_files(plan)
    out = Path(args.out)
    _mkdir(out, "--out")
    written = []
    for name, rows in files.items():
        (out / name).write_text(compose.format_env_file(name, rows, scenario))
        written.append(out / name)
    if args.ib_devices:
        # A reference copy, so the folder shipped to the nodes is complete.
        shutil.copyfile(Path(args.ib_devices).expanduser(), out / "ib_devices.json")
        written.append(out / "ib_devices.json")
    text = compose.commands_text(plan, str(out))
    (out / "commands.txt").write_text(text)
    written.append(out / "commands.txt")
    print(text)
    print("wrote " + ", ".join(str(p) for p in written))
    notes = []
    if not args.model:
        notes.append(f"model path {site.model_path} is a default, not checked: pass --model")
    if not args.ib_devices:
        notes.append(f"{site.ib_devices_file} must exist on every node: `pdrepro ib-devices --out {site.ib_devices_file}`")
    for note in notes:
        print(f"note: {note}")
    return 0


_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_RESOURCE = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")


def scenario_text(spec: str) -> str:
    """The scenario file as written (load_scenario has read it already)."""
    return resolve_path(spec).read_text()


def _k8s(args, scenario) -> int:
    for option, value in (("--namespace", args.namespace), ("--shared-claim", args.shared_claim)):
        if not _DNS_LABEL.match(value or ""):
            raise UserError(f"{option} {value!r}: not a Kubernetes name; use lower-case letters, digits and '-' (at most 63)")
    rdma = None if args.rdma_resource == "none" else args.rdma_resource
    if rdma is not None and not _RESOURCE.match(rdma):
        raise UserError(f"--rdma-resource {rdma!r}: expected a device-plugin resource such as rdma/hca, or none")
    t = scenario.topology
    hosts = [tuple(k8s.pod_host(role, i) for i in range(n))
             for role, n in (("prefill", t.prefill.nodes), ("decode", t.decode.nodes))]
    site = build_site(args, scenario, *hosts)
    plan = launch.Plan(scenario, site).launch_plan()
    cluster = k8s.Cluster(namespace=args.namespace, image=site.image, model_path=site.model_path,
                          dataset_path=site.dataset_path, ib_devices_file=site.ib_devices_file, rdma_resource=rdma,
                          shared_claim=args.shared_claim, scenario_yaml=scenario_text(args.scenario),
                          configuration=plan.topology if scenario.kind == "comparison" else None)
    out = Path(args.out)
    _mkdir(out, "--out")
    written = []
    for name, objects in k8s.manifests(plan, cluster).items():
        (out / name).write_text(k8s.dump(objects))
        written.append(out / name)
    text = k8s.steps_text(plan, cluster, str(out))
    (out / "steps.txt").write_text(text)
    written.append(out / "steps.txt")
    print(text)
    print("wrote " + ", ".join(str(p) for p in written))
    return 0


def _onebox(args, scenario) -> int:
    onebox.check_scenario(scenario)
    given = {ip for ip in (args.prefill_ip, args.decode_ip) if ip}
    if len(given) > 1:
        raise UserError("--prefill-ip and --decode-ip: the one-box target runs everything on one node; "
                        "give one address (or neither)")
    ip = siteinput.parse_ip(given.pop() if given else "127.0.0.1", "--prefill-ip")
    if args.ib_devices:
        raise UserError("--ib-devices: the one-box target lets Mooncake pick the RDMA devices itself; drop the option")
    site = dataclasses.replace(build_site(args, scenario, (ip,), (ip,)), ib_devices_file=None)
    plan = launch.Plan(scenario, site)
    rows = onebox.env_rows(plan)
    out = Path(args.out)
    _mkdir(out, "--out")
    (out / onebox.ENV_FILE).write_text(compose.format_env_file(onebox.ENV_FILE, rows, scenario))
    text = onebox.commands_text(plan, str(out))
    (out / "commands.txt").write_text(text)
    print(text)
    print(f"wrote {out / onebox.ENV_FILE}, {out / 'commands.txt'}")
    if not args.model:
        print(f"note: model path {site.model_path} is a default, not checked: pass --model")
    return 0


def _slurm(args, scenario) -> int:
    from ..targets import slurm

    # Node addresses exist only inside the allocation: the script fills them in.
    site = build_site(args, scenario, *slurm.symbolic_hosts(scenario))
    job = slurm.gpu_job(launch.Plan(scenario, site))
    out = Path(args.out)
    _mkdir(out, "--out")
    path = out / f"{scenario.name}.sbatch"
    path.write_text(slurm.render(job))
    path.chmod(0o755)
    print(f"wrote {path}: {job.prefill_nodes} prefill + {job.decode_nodes} decode node(s), router on the first decode node")
    print(f"submit from the bundle's checkout on a shared filesystem: sbatch {path}")
    print("runtime: Docker on each node (default); sbatch --export=ALL,RUNTIME=pyxis for enroot/pyxis")
    return 0


# Target name -> renderer(args, scenario) -> exit status. A new target adds
# itself here and renders from launch.Plan(...).launch_plan().
RENDERERS = {"compose": _compose, "k8s": _k8s, "onebox": _onebox, "slurm": _slurm}


def run(args) -> int:
    scenario = load_scenario(args.scenario)
    return RENDERERS[args.target](args, scenario)
