"""``pdrepro gpu-check``: GPU-to-GPU KV transfers through Mooncake on one box with two GPUs."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.cliargs import prompt_lens, seconds
from ..core.errors import UserError
from ..core.units import GB, MiB
from ..scenario.site import parse_gpus
from .render import ONEBOX_SCENARIO

if TYPE_CHECKING:  # the gpucheck package loads only when the command runs
    from ..gpucheck.run import Layout


def _gpus(text: str) -> tuple[int, int]:
    """Prefill and decode GPU; one id (or the same twice) puts both sides on that GPU, as on a one-GPU box."""
    ids = [v.strip() for v in text.split(",")]
    if len(ids) == 2 and ids[0] == ids[1]:
        ids = ids[:1]
    gpus = parse_gpus(",".join(ids))
    if len(gpus) == 1:
        return gpus[0], gpus[0]
    if len(gpus) != 2:
        raise UserError(f"--gpus {text!r}: give two GPU ids, prefill first, e.g. 0,1 (or one, e.g. 0, to share it)")
    return gpus[0], gpus[1]


def _layouts(text: str) -> tuple[Layout, ...]:
    from ..gpucheck.run import LAYOUTS, is_layout

    items = tuple(v.strip() for v in text.split(",") if v.strip())
    layouts = tuple(v for v in items if is_layout(v))
    if not items or len(layouts) != len(items) or len(set(items)) != len(items):
        raise UserError(f"--layouts {text!r}: give a comma list of {', '.join(LAYOUTS)}, each once, e.g. one,layers")
    return layouts


def _sizes(scenario, lens: tuple[int, ...] | None) -> tuple[tuple[int, int], ...]:
    lens = lens or scenario.sweep.prompt_lens
    tp = scenario.parallel.prefill_tp
    # One prefill rank's share: what one GPU of the prefill node sends.
    return tuple((n, scenario.kv_bytes(n) // tp) for n in sorted(lens))


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "gpu-check", help="move KV-sized buffers GPU to GPU through Mooncake on one box (before a cluster run)",
        description="Start two processes on two GPUs of this host (or both on one); the first (prefill) writes "
                    "one TP rank's KV cache per prompt length into the second's (decode) GPU memory through the "
                    "Mooncake Transfer Engine; every received byte is checked. Checks GPU memory registration and "
                    "the engine's data path; run it in the GPU image.")
    # The one-box scenario, as every command that serves a one-box run: the engine alone measured beside that run
    # moves its bytes. The published run's sizes need --scenario h20-qwen3-235b-1p1d (`make gpu-check` passes it).
    p.add_argument("--scenario", default=ONEBOX_SCENARIO,
                   help="sizes come from its model and prefill TP (default %(default)s, the one-box scenario; the "
                        "published run's: h20-qwen3-235b-1p1d)")
    p.add_argument("--prompt-lens", help="comma-separated subset or other lengths (default: the scenario's)")
    p.add_argument("--gpus", default=None,
                   help="prefill GPU, decode GPU; one id (0, or 0,0) puts both sides on that GPU (default 0,1, or 0 on "
                        "a box with one GPU, which `stack up` shares the same way)")
    p.add_argument("--layouts", default="blocks",
                   help="how one request's KV is cut into one batch, each measured at every length: blocks (of "
                        "--block-mib), one (one block), layers (a K and a V block per layer, as SGLang's buffers); "
                        "comma-separated (default %(default)s; the engine ceiling of a one-box run: one,layers)")
    p.add_argument("--repeats", type=int, default=3, help="timed transfers per length after one warm-up")
    p.add_argument("--block-mib", type=int, default=64, help="the engine moves each transfer in blocks of N MiB")
    p.add_argument("--transport", choices=("auto", "tcp", "rdma"), default="auto",
                   help="tcp sets MC_FORCE_TCP=1; auto lets the engine pick RDMA when it finds an HCA")
    p.add_argument("--direction", choices=("write", "read"), default="write",
                   help="write: the prefill side pushes, as SGLang does (default); read: the decode side pulls")
    p.add_argument("--memory", choices=("gpu", "host"), default="gpu",
                   help="host rehearses the check without GPUs (e.g. in the smoke image)")
    p.add_argument("--timeout", type=seconds, default=600.0, help="seconds one step may take")
    p.add_argument("--out", type=Path, help="where result.json, engine-ceiling.json (the engine's figure per length, "
                                           "for the report: give the run directory) and the engine logs go "
                                           "(default results/gpu-check-<UTC time>)")
    p.set_defaults(func=run)


def _default_gpus() -> str:
    """Both sides on GPU 0 where the box has one GPU (as `stack up` places a one-GPU stack), else GPUs 0 and 1: the
    engine-alone line a report prints then runs as printed on either box."""
    try:
        from ..host.nvidia import query_gpus

        return "0" if len(query_gpus()) == 1 else "0,1"
    except Exception:  # no nvidia-smi, or it failed: the two-GPU default stands, and the engine says what it finds
        return "0,1"


def run(args) -> int:
    from ..gpucheck.run import Settings
    from ..gpucheck.run import run as check
    from ..scenario.model import load_scenario

    if args.repeats < 1:
        raise UserError(f"--repeats {args.repeats}: give at least 1")
    if args.block_mib < 1:
        raise UserError(f"--block-mib {args.block_mib}: give at least 1")
    scenario = load_scenario(args.scenario)
    out = args.out or Path("results") / time.strftime("gpu-check-%Y%m%dT%H%M%SZ", time.gmtime())
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out} is a file; name a directory")
    settings = Settings(sizes=_sizes(scenario, prompt_lens(args.prompt_lens) if args.prompt_lens else None), repeats=args.repeats,
                        block_bytes=args.block_mib * MiB, gpus=_gpus(args.gpus or _default_gpus()), memory=args.memory,
                        transport=args.transport, direction=args.direction, seed=scenario.sweep.seed,
                        timeout_s=args.timeout, out=out, layouts=_layouts(args.layouts),
                        layers=scenario.geometry.num_hidden_layers)
    largest = max(n for _, n in settings.sizes)
    if settings.memory == "host":
        route = "host memory, process to process (no GPU used)"
    elif settings.gpus[0] == settings.gpus[1]:
        route = f"two processes on GPU {settings.gpus[0]}"
    else:
        route = f"GPU {settings.gpus[0]} -> GPU {settings.gpus[1]}"
    print(f"gpu-check: {scenario.name}, one prefill TP rank's KV (TP {scenario.parallel.prefill_tp}); "
          f"{route}; largest buffer "
          f"{largest / GB:.2f} GB; sizes in decimal MB/GB, bandwidth in decimal GB/s", flush=True)
    result = check(settings, progress=lambda line: print(line, flush=True))
    print(f"gpu-check: transport {result['transport'] or 'unknown'}; "
          f"{'all bytes verified' if result['ok'] else 'FAILED'}; details in {out / 'result.json'}, "
          f"the engine's figure per length in {out / 'engine-ceiling.json'}")
    return 0 if result["ok"] else 1
