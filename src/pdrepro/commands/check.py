"""``pdrepro check RUN``: one line per threshold; exit 0 only when all pass."""

from __future__ import annotations

from pathlib import Path

from ..kinds.registry import kind_of
from ..rundir import RunDir


def register(subparsers) -> None:
    p = subparsers.add_parser("check", help="judge a run against the scenario's thresholds (exit 1 on a failure)",
                              description="Analyse RUN's raw inputs afresh, in memory (nothing in RUN is written; "
                                          "a stale RUN/summary.json is named, and `pdrepro analyze` rewrites it), then "
                                          "evaluate the thresholds and impossible figures. Exit 0: all pass; 1: a check "
                                          "failed; 2: bad input.")
    p.add_argument("run", type=Path, help="run directory")
    p.add_argument("--scenario", help="shipped scenario name or YAML path (default: RUN/scenario.yaml)")
    p.add_argument("--thresholds", help="YAML file of thresholds laid over the scenario's "
                                        "(keys it names win; per-length bounds merge by length)")
    p.set_defaults(func=run)


def run(args) -> int:
    # The kind the folder records judges it (kinds/registry.py): a sweep's, a smoke's or a comparison's summary
    # against the thresholds, a load's steps against the load gates; a composite's folder names its own judge.
    run_dir = RunDir(args.run)
    return kind_of(run_dir).check(run_dir, args)
