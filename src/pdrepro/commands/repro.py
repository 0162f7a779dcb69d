"""``pdrepro repro``: the whole reproduction against a running stack (``pipeline.run``)."""

from __future__ import annotations

import time

from .. import pipeline
from ..core.signals import raise_on_signals
from .requests import REPRODUCTION, pipeline_sweep_request

HELP = "preflight, sweep, analyze and gates against a running stack; exit status: the first that failed"


def register(sub) -> None:
    p = sub.add_parser("repro", help=HELP, description=(
        "Run `pdrepro doctor` (with --preflight), `pdrepro sweep`, `pdrepro analyze` and the gates "
        "(pytest GATES --run-dir RUN), then exit with the first non-zero status. A sweep stopped by bad input "
        "(exit 2) ends it there; a failed length (exit 1) is still analysed and gated."))
    p.add_argument("--scenario", default=pipeline.DEFAULT_SCENARIO,
                   help="shipped scenario name or path to a scenario YAML (default %(default)s)")
    p.add_argument("--router", required=True, metavar="URL", help="router URL the bench client sends to")
    p.add_argument("--out", metavar="RUN", help="run directory (default runs/<date>-<time>; reused to resume)")
    for flag, text in (("--prefill", "prefill server URL"), ("--decode", "decode server URL"),
                       ("--model-path", "model folder"), ("--dataset-path", "ShareGPT JSON"),
                       ("--image", "GPU image of the bench client"), ("--logs-from", "where the servers' logs are"),
                       ("--prefill-logs-from", "the prefill log's source when it differs"),
                       ("--configuration", "comparison scenarios: the configuration this stack is"),
                       ("--thresholds", "YAML file of thresholds laid over the scenario's")):
        p.add_argument(flag, help=f"{text}: passed to `pdrepro sweep {flag}`")
    p.add_argument("--bench-in-place", action="store_true", help="passed to `pdrepro sweep` (a sweep inside the GPU image)")
    p.add_argument("--sweep-args", metavar="WORDS",
                   help='more `pdrepro sweep` flags, one shell-quoted string: --sweep-args="--wait-timeout 60 --metrics"')
    p.add_argument("--preflight", choices=("prefill", "decode"), metavar="ROLE",
                   help="first run `pdrepro doctor --role ROLE` on this node (with --model-path and --dataset-path)")
    p.add_argument("--node-record", action="append", default=[], metavar="FILE",
                   help="another node's record (`pdrepro doctor --role ROLE --out FILE` there), kept as "
                        "RUN/nodes/<role>.json; with the preflight's own record, `pdrepro doctor --pair` runs before "
                        "the sweep and a mismatch stops it (repeat for each node)")
    p.add_argument("--deploy", metavar="DIR",
                   help="the pair check reads page size, KV layout and TP from this rendered launch (default: the "
                        "scenario)")
    p.add_argument("--gates", default=pipeline.DEFAULT_GATES, metavar="DIR",
                   help="the gate suite's folder, repro/ of this bundle (default %(default)s)")
    p.add_argument("--pytest", metavar="COMMAND",
                   help="the gates' pytest command, shell-quoted (default: this interpreter's pytest; "
                        "without one the run is judged by `pdrepro check`, the code the gates call)")
    p.add_argument("--quiet", action="store_true", help="no step announcements")
    p.set_defaults(func=run)


def run(args) -> int:
    # The sweep is built once, here, before any stage runs: its own flags typed, --sweep-args read over them by the
    # sweep's parser (words that set the pipeline's own flags refused first, naming `repro`'s option).
    sweep = pipeline_sweep_request(
        pipeline.sweep_extra(args.sweep_args),
        missing_fix="no {flag}: the sweep needs it; pass `pdrepro repro {flag} ...`",
        scenario=args.scenario, router=args.router, out=args.out or f"runs/{time.strftime('%Y%m%d-%H%M%S')}",
        prefill=args.prefill, decode=args.decode, model_path=args.model_path, dataset_path=args.dataset_path,
        image=args.image, logs_from=args.logs_from, prefill_logs_from=args.prefill_logs_from,
        configuration=args.configuration, thresholds=args.thresholds, bench_in_place=args.bench_in_place,
        no_analyze=True)
    p = pipeline.Pipeline(sweep=sweep, preflight_role=args.preflight, gates=args.gates,
                          pytest=pipeline.split_words(args.pytest, "--pytest"), quiet=args.quiet,
                          node_records=tuple(args.node_record), deploy=args.deploy)
    # SIGTERM, SIGHUP and Ctrl-C at any stage stop the whole pipeline as an interrupt (the gates' child is
    # killed on the way out); the CLI ends it with 128 + the signal's number (130, 143). Raised at once: the
    # pipeline's own stages wait in the main thread (the gates' child, a preflight); the sweep stage puts its
    # own flag-based handlers in place for its threads while it runs.
    with raise_on_signals():
        return pipeline.run(p, stages=REPRODUCTION)
