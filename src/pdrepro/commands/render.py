"""``pdrepro render``: the launch of a scenario, placed by a target: compose
env files per node (default), Kubernetes manifests or a SLURM sbatch script. Every target renders
the same ``launch.Plan`` through one interface (``targets.base.Target``), registered in
``targets.registry``; this command builds the site from its options and writes what the target renders."""

from __future__ import annotations

import os
from pathlib import Path

from .. import launch, siteinput
from ..errors import UserError
from ..scenario import load_scenario
from ..targets.registry import TARGETS

HELP = "write a scenario's launch for a target (compose env files per node, Kubernetes manifests, or a SLURM sbatch script)"


def register(subparsers) -> None:
    p = subparsers.add_parser("render", help=HELP, description=HELP[0].upper() + HELP[1:] + ".")
    p.add_argument("--target", choices=sorted(TARGETS), default="compose",
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


def run(args) -> int:
    scenario = load_scenario(args.scenario)
    target = TARGETS[args.target]
    site = build_site(args, scenario, *target.hosts(scenario, args))
    rendered = target.render(launch.Plan(scenario, site), args, args.out)
    out = Path(args.out)
    _mkdir(out, "--out")
    written = []
    for name, text in rendered.files.items():
        path = out / name
        path.write_text(text)
        if name in rendered.executable:
            path.chmod(0o755)
        written.append(path)
    if rendered.commands:
        print(rendered.commands)
    print("wrote " + ", ".join(str(p) for p in written) + rendered.wrote)
    for note in rendered.notes:
        print(note)
    return 0
