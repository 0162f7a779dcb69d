"""``pdrepro render``: the launch of a scenario, placed by a target: compose
files per node (default), Kubernetes manifests or a SLURM sbatch script. Every target renders
the same ``launch.Plan`` through one interface (``targets.base.Target``), registered in
``targets.registry``; this command builds the site from its options and writes what the target renders."""

from __future__ import annotations

import argparse
import dataclasses
import os
import shlex
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.errors import UserError

# The site's defaults only: the plan, the targets and the scenario (pydantic, YAML) are imported where a command
# runs, so that building the command line (`pdrepro --help`) stays light.
from ..launch import site as launch
from ..launch.filewrite import write_file
from ..launch.request import cluster_run_dir_problem
from ..launch.targets.names import TARGET_NAMES
from ..scenario import site as siteinput

if TYPE_CHECKING:
    from ..launch.plan import Plan
    from ..launch.request import RenderRequest
    from ..launch.targets.base import Rendered
    from ..scenario.model import Scenario
from .shared_options import TCP_BACKEND, add_gpus, add_transport, tcp_option, transfer_backend

__all__ = ["TCP_BACKEND", "transfer_backend"]  # where the launch commands took them from before the shared options

HELP = "write a scenario's launch for a target (compose files per node, Kubernetes manifests, or a SLURM sbatch script)"

# The one-box target places the one-box scenario unless told otherwise, the same default as `pdrepro stack up`
# (which starts what `render --target onebox --launcher host` prints); the cluster targets place the published run.
ONEBOX_SCENARIO = "onebox-qwen25-0.5b"
PUBLISHED_SCENARIO = "h20-qwen3-235b-1p1d"


def default_scenario(target: str) -> str:
    """The scenario ``render`` places when no --scenario is given: it depends on the target."""
    return ONEBOX_SCENARIO if target == "onebox" else PUBLISHED_SCENARIO


def _by_target() -> list[tuple[str, str]]:
    # Grouped for the help text: the one-box target first, then the targets sharing the published run.
    others = "|".join(t for t in TARGET_NAMES if t != "onebox")
    return [("onebox", ONEBOX_SCENARIO), (others, PUBLISHED_SCENARIO)]


def register(subparsers) -> None:
    p = subparsers.add_parser("render", help=HELP, description=HELP[0].upper() + HELP[1:] + ".")
    p.add_argument("--target", choices=TARGET_NAMES, default="compose",
                   help="where the launch runs (default %(default)s)")
    p.add_argument("--scenario", default=None,
                   help="shipped scenario name or path to a scenario YAML (default: "
                        + ", ".join(f"{name} for --target {t}" for t, name in _by_target()) + ")")
    p.add_argument("--prefill-ip", default=os.environ.get("PREFILL_IP"),
                   help="compose: RDMA-reachable address of each prefill node, comma-separated (the first also runs the "
                        "first regular instance); env PREFILL_IP")
    p.add_argument("--decode-ip", default=os.environ.get("DECODE_IP"),
                   help="compose: RDMA-reachable address of each decode node, comma-separated; "
                        "the first runs the router; env DECODE_IP")
    add_site_options(p)
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
    p.add_argument("--launcher", choices=("compose", "host"), default="compose",
                   help="onebox: compose (the GPU image) or host (what `pdrepro stack up` runs with this Python) "
                        "(default %(default)s)")
    p.add_argument("--run-dir", metavar="PATH",
                   help="slurm, k8s: the absolute folder the job's `pdrepro repro` writes its run into (slurm: on the "
                        "filesystem the nodes share with the submit host; k8s: the Job mounts the shared claim's "
                        "runs/<last two names of PATH> there) (default: slurm $JOB_DIR/run, k8s /shared/runs/<pod>)")
    p.add_argument("--out", default="deploy", help="folder for the rendered files (default %(default)s)")
    p.set_defaults(func=run)


def add_site_options(p, host: bool = False) -> None:
    """Where the stack runs on the nodes: the options every launch shares (render's targets, the host launcher:
    ``host``, whose --gpus are this host's)."""
    p.add_argument("--model", help="model folder on the nodes; checked here for config.json when given "
                   f"(default {launch.DEFAULT_MODEL_ROOT}/<model name>, not checked)")
    p.add_argument("--dataset",
                   help=f"ShareGPT JSON on the nodes; checked when given (default {launch.DEFAULT_DATASET}, not checked)")
    add_gpus(p, host)
    add_server_options(p)
    add_transport(p)


def add_server_options(p) -> None:
    """Every server's memory share and extra flags (the launches and the commands that start members)."""
    p.add_argument("--mem-fraction", type=_fraction, metavar="F",
                   help="every server's --mem-fraction-static (a fraction of the GPU memory free when it starts; default: "
                        "the scenario's launch.shared_gpu_mem_fraction when the servers share one GPU, else SGLang's)")
    p.add_argument("--server-arg", action="append", default=[], metavar="'FLAG [VALUE]'",
                   help="extra flags appended to every server's argv, e.g. --server-arg='--attention-backend triton' "
                        "(repeatable; split like a shell line)")


def _check_run_dir(args) -> None:
    given = getattr(args, "run_dir", None)
    if given is None:
        return
    if args.target not in ("slurm", "k8s"):
        raise UserError(f"--run-dir {given}: only a cluster job (--target slurm or k8s) takes it; drop it")
    problem = cluster_run_dir_problem(given)
    if problem:
        raise UserError(f"--run-dir {given!r}: {problem}")


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.01 <= value <= 0.95:
        raise argparse.ArgumentTypeError(f"{text!r}: give a fraction between 0.01 and 0.95, e.g. 0.30")
    return value


def server_arg_words(values: list[str]) -> tuple[str, ...]:
    words: list[str] = []
    for value in values:
        try:
            words += shlex.split(value)
        except ValueError as exc:
            raise UserError(f"--server-arg {value!r}: {exc}; quote it as a shell line") from None
    if words and not words[0].startswith("--"):
        raise UserError(f"--server-arg {values[0]!r}: the extra server args start with a flag (--NAME)")
    return tuple(words)


def onebox_plan(args, scenario, python: str = launch.PYTHON) -> Plan:
    """The one-box plan from the site options, as `render --target onebox` places it; ``python`` is the
    interpreter every argv starts with (the host launcher's own)."""
    from ..launch.plan import Plan
    from ..launch.targets.registry import TARGETS

    target = TARGETS["onebox"]
    site = build_site(args, scenario, *target.hosts(scenario, args))
    # Mooncake picks the RDMA devices itself on one box: no device file.
    return Plan(scenario, dataclasses.replace(site, ib_devices_file=None, python=python))


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
        mem_fraction=args.mem_fraction, extra_server_args=server_arg_words(args.server_arg),
        transfer_backend=transfer_backend(args),
    )


def _mkdir(out: Path, option: str) -> None:
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"{option} {out}: cannot create it ({exc.strerror}); choose a writable folder") from None


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def rendered(given) -> Rendered:
    """Every check `render` makes and the files it would write, in memory, for ``given``: its parsed command line,
    or a runner's typed request (launch.request). Nothing is written."""
    from ..launch.plan import Plan
    from ..launch.request import RenderRequest
    from ..launch.targets.registry import TARGETS
    from ..scenario.model import load_scenario

    args = RenderRequest.from_args(given)
    # Resolved once, here: the targets read args.scenario too (k8s ships the scenario file itself).
    name = args.scenario or default_scenario(args.target)
    args = dataclasses.replace(args, scenario=name)
    scenario = load_scenario(name)
    if args.target != "onebox":
        # Clusters have RDMA and their schedulers; the host launcher and TCP are for one box.
        tcp = tcp_option(args)
        for given, option in ((tcp is not None, tcp), (args.launcher != "compose", "--launcher host")):
            if given:
                raise UserError(f"{option}: only the one-box target takes it; use --target onebox or drop the option")
    _check_run_dir(args)
    target = TARGETS[args.target]
    site = build_site(args, scenario, *target.hosts(scenario, args))
    return target.render(Plan(scenario, site), args, args.out)


def run(args) -> int:
    made = rendered(args)  # a parsed command line or a typed request: both name --out and --ib-devices alike
    out = Path(args.out)
    _mkdir(out, "--out")
    # An input given inside --out (--ib-devices deploy/ib_devices.json) is already the copy: kept as it is.
    inputs = [Path(p).expanduser() for p in (getattr(args, "ib_devices", None),) if p]
    written = []
    for name, text in made.files.items():
        path = out / name
        if not any(_same_file(path, given) for given in inputs):
            write_file(path, text, "render", 0o755 if name in made.executable else 0o644)
        written.append(path)
    if made.commands:
        print(made.commands)
    print("wrote " + ", ".join(str(p) for p in written) + made.wrote)
    for note in made.notes:
        print(note)
    return 0


def check_jobs(jobs: Sequence[tuple[str, Scenario, Callable[[str], RenderRequest]]]) -> None:
    """Each member's `pdrepro render` done in memory before any is written (`ab --render`, `tune --render`): a bad
    input is refused in one line naming the member, with nothing rendered and nothing written into the run.
    ``jobs``: (member, its scenario, its render request given the path of its scenario file). The member's
    scenario is not in the run yet (it is written once every job holds), so each is read from a private copy,
    removed at the end: the render reads the file (k8s ships it whole), and the run folder's paths reach the checks
    as the request's run_dir and out, which the copy's path does not change."""
    import tempfile

    from ..core.safewrite import write_file as write_private

    with tempfile.TemporaryDirectory(prefix="pdrepro-jobs-") as folder:
        for index, (member, scenario, request_of) in enumerate(jobs):
            path = Path(folder) / f"{index}.yaml"
            write_private(path, scenario.to_yaml(), "the job check", Path(folder))
            try:
                rendered(request_of(str(path)))
            except UserError as exc:
                raise UserError(f"{member}'s job (`pdrepro render`): {exc}") from None
