"""``pdrepro analyze RUN``: the run's table, summary.json, report.md and plots."""

from __future__ import annotations

from pathlib import Path


def register(subparsers) -> None:
    p = subparsers.add_parser("analyze", help="turn a finished run into the published table, report and plots",
                              description="Parse RUN/bench/*.jsonl and RUN/logs/*.log; write RUN/summary.json, "
                                          "RUN/report.md and RUN/plots/*.png.")
    p.add_argument("run", type=Path, help="run directory (holds bench/ and logs/)")
    p.add_argument("--scenario", help="shipped scenario name or YAML path (default: RUN/scenario.yaml)")
    p.set_defaults(func=run)


def run(given) -> int:
    """`analyze` of ``given``: its parsed command line, or a runner's typed request (rundir.request)."""
    # The kinds and the run directory (pydantic, the analysis) load when the command runs, not for its --help.
    from ..kinds.registry import kind_of
    from ..rundir import RunDir
    from ..rundir.request import AnalyzeRequest

    args = AnalyzeRequest.from_args(given)

    # The kind the folder records writes its summary and report (kinds/registry.py).
    run_dir = RunDir(args.run)
    return kind_of(run_dir).analyze(run_dir, args)
