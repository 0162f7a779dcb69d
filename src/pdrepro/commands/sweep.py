"""``pdrepro sweep``: run the published bench loop against a running stack."""

from __future__ import annotations

import sys
from pathlib import Path

from ..core.cliargs import seconds
from ..core.errors import UserError
from ..core.roles import SERVER_ROLES

# The choices only: the sweep and the scenario (pydantic, YAML, HTTP) are imported where the command runs, so that
# building the command line (`pdrepro --help`) stays light.
from ..sweep.choices import DEFAULT_WAIT_S, FAILURE_POLICIES
from . import shared_options as shared


def register(sub) -> None:
    p = sub.add_parser(
        "sweep",
        help="run the bench client once per prompt length against a running PD stack",
        description=(
            "Wait for the router and workers; read from the servers' logs which transport their engines use and "
            "stop unless the scenario allows it (RDMA; TCP too under transport: any); run the bench client once "
            "per prompt length (in a container of the GPU image, or here with --bench-in-place); collect logs, "
            "counters and provenance, then analyze. "
            "Rerunning with the same --out resumes: complete lengths are skipped."
        ),
    )
    add_stack_options(p, what="prompt length")
    p.add_argument("--worker", metavar="URL", action="append", default=[],
                   help="a regular (non-PD) server URL; repeat per server")
    p.add_argument("--configuration", help="comparison scenarios: which configuration this stack is (e.g. 1P1D, 2-regular)")
    p.add_argument("--ib-devices", metavar="FILE", type=Path,
                   help="the GPU-to-NIC map (ib_devices.json) the servers were started with: kept in the run as "
                        "RUN/ib_devices.json, so the NIC witness judges each RDMA port it names on its own")
    shared.add_prompt_lens(p)
    p.add_argument("--no-analyze", action="store_true", help="skip `pdrepro analyze` at the end")
    p.set_defaults(func=run)


def add_stack_options(p, what: str, shared_names: bool = False) -> None:
    """The options of a measurement against a running stack, declared once: `pdrepro sweep` and `pdrepro load`
    take them alike (``what``: what one run of the bench client measures, for the help texts). ``shared_names``
    (`load`): the model and dataset under the names the commands that run members share (commands.shared_options),
    --model-path and --dataset-path kept as their older spellings."""
    p.add_argument("--scenario", required=True, help="shipped scenario name or path to a scenario YAML")
    p.add_argument("--thresholds",
                   help="YAML file of thresholds laid over the scenario's (keys it names win; kept in RUN/scenario.yaml)")
    p.add_argument("--router", required=True, metavar="URL", help="router URL the bench client sends to, e.g. http://10.0.0.2:8000")
    p.add_argument("--prefill", metavar="URL", help="prefill server URL (health check, /metrics)")
    p.add_argument("--decode", metavar="URL", help="decode server URL (health check, /metrics)")
    p.add_argument("--out", required=True, metavar="RUN", type=Path, help="run directory (created; reused to resume)")
    model = "model folder (its tokenizer is used); mounted at the same path in the image"
    dataset = "ShareGPT JSON the random dataset draws token ids from"
    if shared_names:
        shared.add_model(p, "--model-path", required=True, dest="model_path", help=model)
    else:
        p.add_argument("--model-path", required=True, help=model)
    p.add_argument("--served-model-name", help="name the servers serve the model under (default: the scenario's model name)")
    p.add_argument("--tokenizer", help="tokenizer path if not the model folder")
    if shared_names:
        shared.add_dataset(p, "--dataset-path", required=True, dest="dataset_path", help=dataset)
    else:
        p.add_argument("--dataset-path", required=True, help=dataset)
    p.add_argument("--image",
                   help="GPU image to run the bench client in (default: GPU_IMAGE from versions.env, the image the servers run)")
    p.add_argument("--bench-in-place", action="store_true",
                   help="run the bench client here as a child process, not in a container: for a sweep that already "
                        "runs inside the GPU image (the Kubernetes Job)")
    p.add_argument("--logs-from", metavar="DIR|docker|docker:ssh://HOST",
                   help="where the servers' logs are: a folder with prefill.log/decode.log (and prefill-1.log, ... of further "
                        "servers: xPyD needs the folder they all share), 'docker' (containers by "
                        "name on this host) or docker:ssh://user@host (another node's engine)")
    p.add_argument("--prefill-logs-from", metavar="DIR|docker|docker:ssh://HOST",
                   help="the prefill log's source when it differs (the prefill server runs on the other node)")
    p.add_argument("--prefill-container", default="pdrepro-prefill", help="prefill container name for --logs-from docker")
    p.add_argument("--decode-container", default="pdrepro-decode", help="decode container name for --logs-from docker")
    p.add_argument("--router-container", default="pdrepro-router",
                   help="router container name (its image and environment go in the provenance)")
    p.add_argument("--length-timeout", type=seconds, metavar="SEC", help=f"stop a {what}'s client after SEC seconds")
    p.add_argument("--wait-timeout", type=seconds, default=DEFAULT_WAIT_S, metavar="SEC",
                   help=f"how long to wait for the stack to be healthy: the whole wait, every request in it "
                        f"(default {DEFAULT_WAIT_S:g})")
    p.add_argument("--on-failure", choices=FAILURE_POLICIES, default=FAILURE_POLICIES[0],
                   help=f"after a failed {what} (default: {FAILURE_POLICIES[0]})")
    p.add_argument("--metrics", action="store_true",
                   help=f"scrape the servers' /metrics before and after each {what}; its metrics/<role>-<L>.prom "
                        "is the difference (needs --enable-metrics)")
    p.add_argument("--no-transport-proof", action="store_true",
                   help="do not check the logs for RDMA (the run then fails the transport gate)")


def default_image() -> str:
    from ..core.pins import load_pins

    image = load_pins().get("GPU_IMAGE")
    if image:
        return image
    raise UserError("no GPU image named in versions.env; pass --image NAME:TAG (the image the servers run)")


def _log_source(args, servers: dict[str, int]):
    from ..sweep.logsource import PerRoleLogSource, from_spec, require_every_server

    names = {"prefill": args.prefill_container, "decode": args.decode_container, "router": args.router_container}
    if args.prefill_logs_from is None:
        source = from_spec(args.logs_from, names) if args.logs_from is not None else None
    else:
        sources = {"prefill": from_spec(args.prefill_logs_from, names)}
        if args.logs_from is not None:
            sources["decode"] = from_spec(args.logs_from, names)
        source = PerRoleLogSource(sources)
    if source is not None:
        require_every_server(source, servers)
    return source


def _servers(scenario, configuration: str | None) -> dict[str, int]:
    """Servers per role of the stack this sweep measures (a regular configuration has no roles)."""
    from ..sweep.config import is_disaggregated

    if not is_disaggregated(configuration):
        return {}
    return {role: scenario.topology.servers(role) for role in SERVER_ROLES}


def keep_rail_map(path: Path | None, out: Path, scenario) -> Path | None:
    """The servers' GPU-to-NIC map given with --ib-devices, checked before anything runs; the sweep keeps it in the
    run (the per-rail witness reads it there) once the servers do not contradict it (sweep.railmap). A resumed run
    keeps the map it began with, since its earlier lengths' rails were the ones that map names."""
    from ..core import runfile
    from ..scenario.site import check_ib_devices
    from ..sweep.railmap import MAP_FILE, devices_by_gpu, gpus_in_use

    if path is None:
        return None
    path = path.expanduser()
    gpus = gpus_in_use(scenario)
    check_ib_devices(path, gpus)
    kept = out / MAP_FILE
    if kept.is_symlink() or (kept.exists() and not kept.is_file()):
        raise UserError(f"--out {out}: its {MAP_FILE} is not a plain file; move it aside and rerun")
    if kept.is_file() and devices_by_gpu(runfile.read_text(kept), gpus) != devices_by_gpu(runfile.read_text(path), gpus):
        raise UserError(f"--ib-devices {path}: differs from the map the run began with ({kept}); resume with "
                        "that map, or sweep into a new --out")
    return path


def stack_config(args, scenario, *, configuration: str | None = None,
                 worker_urls: tuple[str, ...] = (), analyze=None):
    """The SweepConfig the options of ``add_stack_options`` ask for (the sweep's and the load's alike)."""
    from ..sweep.benchclient import BenchLauncher, DockerLauncher, InPlaceLauncher
    from ..sweep.benchcmd import BenchTarget
    from ..sweep.config import SweepConfig

    # Model and dataset are mounted: the client has no reason to reach a model hub.
    offline = {"HF_HUB_OFFLINE": "1"} if Path(args.model_path).is_dir() else {}
    launcher: BenchLauncher
    if args.bench_in_place:
        launcher = InPlaceLauncher(env=offline)
    else:
        launcher = DockerLauncher(args.image or default_image(), env=offline)
    return SweepConfig(
        scenario=scenario,
        out=args.out,
        router_url=args.router,
        prefill_url=args.prefill,
        decode_url=args.decode,
        worker_urls=worker_urls,
        # In place, the client runs with the Python running this sweep (the one provenance names), not whatever
        # `python` is first on PATH: on the recorded H200 run a `python` without the serving packages failed it.
        target=BenchTarget(args.router, args.model_path, args.served_model_name or scenario.model.name,
                           args.dataset_path, args.tokenizer,
                           **({"python": sys.executable} if args.bench_in_place else {})),
        launcher=launcher,
        log_source=_log_source(args, _servers(scenario, configuration)),
        configuration=configuration,
        length_timeout_s=args.length_timeout,
        wait_timeout_s=args.wait_timeout,
        on_failure=args.on_failure,
        prove_transport=not args.no_transport_proof,
        scrape_metrics=args.metrics,
        analyze=analyze,
        bench_image=launcher.image_digest(),
    )


def run(given) -> int:
    """The sweep of ``given``: its parsed command line, or a runner's typed request (sweep.request), one type."""
    from ..core.signals import stop_on_signals
    from ..kinds.registry import analyze_run
    from ..scenario.model import resolve_scenario
    from ..sweep.config import is_disaggregated
    from ..sweep.request import SweepRequest
    from ..sweep.runner import run_sweep

    args = SweepRequest.from_args(given)
    if args.out.exists() and not args.out.is_dir():
        raise UserError(f"--out {args.out}: is a file, not a run directory; give a folder (new, or a run to resume)")
    # --prompt-lens narrows the scenario the sweep runs and records (RUN/scenario.yaml): the run is judged by the
    # lengths it measured.
    scenario = shared.narrow(args, resolve_scenario(args.scenario, None, args.thresholds))
    ib_devices = keep_rail_map(args.ib_devices, args.out, scenario)
    if is_disaggregated(args.configuration) and not (args.prefill and args.decode):
        raise UserError("pass --prefill URL and --decode URL (the PD servers behind the router) so their health is checked")
    cfg = stack_config(args, scenario, configuration=args.configuration, worker_urls=tuple(args.worker),
                       analyze=None if args.no_analyze else analyze_run)
    cfg.ib_devices = ib_devices
    with stop_on_signals():
        outcome = run_sweep(cfg)
    if outcome.failed:
        print(f"pdrepro sweep: {len(outcome.failed)} prompt length(s) failed; see {outcome.run.sweep_state_file}",
              file=sys.stderr)
        return 1
    return 0
