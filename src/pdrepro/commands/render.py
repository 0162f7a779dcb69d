"""``pdrepro render``: per-node env files for the compose stacks, and the exact
commands each node will run."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from .. import launch
from ..errors import UserError
from ..scenario import load_scenario

HELP = "write the compose env files for both nodes and print the commands they will run"


def register(subparsers) -> None:
    p = subparsers.add_parser("render", help=HELP, description=HELP[0].upper() + HELP[1:] + ".")
    p.add_argument("--scenario", default="h20-qwen3-235b-1p1d",
                   help="shipped scenario name or path to a scenario YAML (default %(default)s)")
    p.add_argument("--prefill-ip", default=os.environ.get("PREFILL_IP"),
                   help="RDMA-reachable address of the prefill node (also the first regular instance's); env PREFILL_IP")
    p.add_argument("--decode-ip", default=os.environ.get("DECODE_IP"),
                   help="RDMA-reachable address of the decode node, which runs the router; env DECODE_IP")
    p.add_argument("--model", help="model folder on the nodes; checked here for config.json when given "
                   f"(default {launch.DEFAULT_MODEL_ROOT}/<model name>, not checked)")
    p.add_argument("--dataset", help=f"ShareGPT JSON on the nodes; checked when given (default {launch.DEFAULT_DATASET}, not checked)")
    p.add_argument("--gpus", help="GPU ids per node, comma-separated (default 0..TP-1; on a single node, both servers' sets)")
    p.add_argument("--ib-devices", help="GPU-to-RDMA-device JSON (from `pdrepro ib-devices`), same path on the nodes; "
                   f"checked and copied into --out when given (default {launch.DEFAULT_IB_DEVICES}, not checked)")
    p.add_argument("--log-dir", default=launch.DEFAULT_LOG_DIR, help="host folder on each node receiving the server logs (default %(default)s)")
    p.add_argument("--memlock", type=int, default=launch.MEMLOCK_UNLIMITED,
                   help="locked-memory limit for the servers in bytes (default -1 = unlimited)")
    p.add_argument("--out", default="deploy", help="folder for the env files and commands.txt (default %(default)s)")
    p.set_defaults(func=run)


def _abs(path: str) -> str:
    return str(Path(path).expanduser().absolute())


def build_site(args, scenario) -> launch.Site:
    prefill_ip = launch.parse_ip(args.prefill_ip, "--prefill-ip")
    decode_ip = launch.parse_ip(args.decode_ip, "--decode-ip")
    launch.check_two_node_ips(prefill_ip, decode_ip)
    if args.model:
        model = Path(args.model).expanduser()
        if not (model / "config.json").is_file():
            raise UserError(f"--model {args.model}: no config.json there; give the model's folder (the one holding config.json and the weights)")
        model_path = _abs(args.model)
    else:
        model_path = f"{launch.DEFAULT_MODEL_ROOT}/{scenario.model.name}"
    if args.dataset:
        if not Path(args.dataset).expanduser().is_file():
            raise UserError(f"--dataset {args.dataset}: no such file; give the ShareGPT_V3_unfiltered_cleaned_split.json path")
        dataset = _abs(args.dataset)
    else:
        dataset = launch.DEFAULT_DATASET
    tps = [scenario.parallel.prefill_tp, scenario.parallel.decode_tp]
    if scenario.launch and scenario.launch.regular_tp:
        tps.append(scenario.launch.regular_tp)
    if args.gpus is not None:
        gpus = launch.parse_gpus(args.gpus)
    else:
        per_server = max(tps)
        gpus = tuple(range(2 * per_server if prefill_ip == decode_ip else per_server))
    if args.ib_devices:
        launch.check_ib_devices(Path(args.ib_devices).expanduser(), max(tps))
        ib_devices = _abs(args.ib_devices)
    else:
        ib_devices = launch.DEFAULT_IB_DEVICES
    if args.memlock != launch.MEMLOCK_UNLIMITED and args.memlock < 1:
        raise UserError(f"--memlock {args.memlock}: give a byte count, or -1 for unlimited")
    if not args.log_dir or not args.log_dir.startswith("/"):
        raise UserError(f"--log-dir {args.log_dir!r}: give an absolute folder path on the nodes")
    return launch.Site(
        prefill_ip=prefill_ip, decode_ip=decode_ip, model_path=model_path, dataset_path=dataset,
        ib_devices_file=ib_devices, gpus=gpus, image=launch.gpu_image(), log_dir=args.log_dir, memlock=args.memlock,
    )


def run(args) -> int:
    scenario = load_scenario(args.scenario)
    site = build_site(args, scenario)
    plan = launch.Plan(scenario, site)
    out = Path(args.out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"--out {args.out}: cannot create it ({exc.strerror}); choose a writable folder") from None
    written = []
    for name, rows in plan.env_files().items():
        (out / name).write_text(launch.format_env_file(name, rows, scenario))
        written.append(out / name)
    if args.ib_devices:
        # A reference copy, so the folder shipped to the nodes is complete.
        shutil.copyfile(Path(args.ib_devices).expanduser(), out / "ib_devices.json")
        written.append(out / "ib_devices.json")
    text = launch.commands_text(plan, str(out))
    (out / "commands.txt").write_text(text)
    written.append(out / "commands.txt")
    print(text)
    print("wrote " + ", ".join(str(p) for p in written))
    notes = []
    if not args.model:
        notes.append(f"model path {site.model_path} is a default, not checked: pass --model")
    if not args.ib_devices:
        notes.append(f"{site.ib_devices_file} must exist on both nodes: `pdrepro ib-devices --out {site.ib_devices_file}`")
    for note in notes:
        print(f"note: {note}")
    return 0
