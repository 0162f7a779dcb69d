"""``pdrepro smoke``: KV-sized transfers through the real Mooncake Transfer Engine (and NIXL) between two containers."""

from __future__ import annotations

import os
from pathlib import Path

from ..core.cliargs import prompt_lens, seconds
from ..core.errors import UserError
from ..core.units import MiB


def as_run(scenario, plan):
    """The scenario as this run executes it: its lengths and transfer count, so
    the run's scenario.yaml and the shared checks describe what really ran."""
    lens = tuple(r.prompt_len for r in plan.rows)
    t = scenario.thresholds
    thresholds = t.model_copy(update={
        "min_bandwidth_GB_s": {k: v for k, v in t.min_bandwidth_GB_s.items() if k in lens},
        "max_ttft_ms": {k: v for k, v in t.max_ttft_ms.items() if k in lens}})
    sweep = scenario.sweep.model_copy(update={"prompt_lens": lens, "num_prompts": plan.repeats})
    return scenario.model_copy(update={"sweep": sweep, "thresholds": thresholds})


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "smoke", help="move KV-cache-sized buffers between two containers through Mooncake (no GPU needed)",
        description="Bring up compose/smoke.yaml (two containers from the smoke image), move a buffer sized as "
                    "the KV cache of each prompt length through the Mooncake Transfer Engine and through a plain "
                    "socket, verify every byte, and write results/<id>/ (summary.json, report.md, plots).")
    p.add_argument("--scenario", default="smoke-tcp", help="shipped scenario name or YAML path (default: smoke-tcp)")
    p.add_argument("--prompt-lens", help="comma-separated subset of the scenario's prompt lengths")
    p.add_argument("--repeats", type=int, default=None,
                   help="timed transfers per size, after one warm-up (default: the scenario's sweep.num_prompts)")
    p.add_argument("--block-mib", type=int, default=128,
                   help="the engine moves each transfer in blocks of this many MiB, >= 1 (default 128: one block "
                        "up to the 32K-token size of the smoke scenario)")
    p.add_argument("--transport", choices=("auto", "tcp", "rdma"), default=os.environ.get("SMOKE_TRANSPORT", "auto"),
                   help="auto: whatever Mooncake finds; tcp: force TCP; rdma: fail unless RDMA is used "
                        "(default: $SMOKE_TRANSPORT or auto)")
    p.add_argument("--wait", choices=("sleep", "spin"), default="sleep",
                   help="how the decode side waits for each transfer: sleep (short sleeps between checks, default; "
                        "leaves the CPU to the engine on small machines) or spin (the engine's busy-polling "
                        "synchronous call, as SGLang uses it)")
    p.add_argument("--tcp-nodelay", action="store_true",
                   help="experiment: both agents run with Nagle's algorithm off (TCP_NODELAY on every TCP socket, "
                        "through a preload library built here with cc); compare with a default run to tell "
                        "whether mid-size stalls are Nagle against delayed ACKs")
    p.add_argument("--quickack", action="store_true",
                   help="experiment: both containers turn delayed ACKs off on their bridge route (ip route ... "
                        "quickack 1; adds NET_ADMIN), Nagle untouched; the other half of the --tcp-nodelay test")
    p.add_argument("--backends", default="mooncake",
                   help="comma list of transfer engines to move the bytes through beside the socket copy: mooncake, "
                        "or mooncake,nixl (NIXL over UCX restricted to TCP, host memory; default mooncake)")
    p.add_argument("--image", default=None, help="smoke image (default: SMOKE_IMAGE from versions.env)")
    p.add_argument("--results", default="results", help="folder for run directories (default: results)")
    p.add_argument("--compose-file", default=None, help="default: compose/smoke.yaml of this checkout")
    p.add_argument("--memlock", default=os.environ.get("SMOKE_MEMLOCK"),
                   help="container memlock limit in bytes, -1 = unlimited (default: $SMOKE_MEMLOCK, else the "
                        "local Docker engine's own cap when it has one, else unlimited)")
    p.add_argument("--host-ip", default=os.environ.get("SMOKE_HOST_IP"),
                   help="RDMA only: the host's address on the RDMA netdev (default: $SMOKE_HOST_IP or the hostname's)")
    p.add_argument("--timeout", type=seconds, default=600, help="seconds before the run is abandoned (default 600)")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..core.pins import load_pins
    from ..fabric.limits import engine_memlock_cap
    from ..kinds.smoke import write_outputs
    from ..scenario.model import KvSweepScenario, load_scenario
    from ..scenario.smokeplan import make_plan
    from ..smoke.run import run_smoke
    from ..smoke.settings import parse_backends
    from ..smoke.stack import SmokeOptions, find_compose_file

    backends = parse_backends(args.backends)
    scenario = load_scenario(args.scenario)
    if not isinstance(scenario, KvSweepScenario):
        raise UserError(f"scenario {scenario.name} is a {scenario.kind}; the smoke needs a kv-sweep scenario")
    # make_plan validates repeats and block size (the same checks guard a plan read back from SMOKE_PLAN).
    repeats = scenario.sweep.num_prompts if args.repeats is None else args.repeats
    # Unsaid, the containers ask for what the local Docker engine can grant: its own cap, else unlimited.
    memlock = args.memlock if args.memlock is not None else engine_memlock_cap()
    if memlock is not None:
        try:
            int(memlock)
        except ValueError:
            raise UserError(f"memlock {memlock!r}: give bytes as an integer, or -1 for unlimited") from None
    plan = make_plan(scenario, prompt_lens(args.prompt_lens) if args.prompt_lens else None,
                     repeats=repeats, block_bytes=args.block_mib * MiB)
    scenario = as_run(scenario, plan)
    image = args.image or os.environ.get("SMOKE_IMAGE") or load_pins().get("SMOKE_IMAGE")
    if not image:
        raise UserError("no smoke image named; pass --image or set SMOKE_IMAGE in docker/versions.env")
    opts = SmokeOptions(scenario=scenario, plan=plan, image=image, transport=args.transport,
                        results=Path(args.results), compose_file=find_compose_file(args.compose_file),
                        memlock=memlock, timeout_s=args.timeout, host_ip=args.host_ip,
                        wait=args.wait, tcp_nodelay=args.tcp_nodelay,
                        quickack=args.quickack, backends=backends)
    return run_smoke(opts, write_outputs)
