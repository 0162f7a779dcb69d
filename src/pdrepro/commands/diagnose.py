"""``pdrepro diagnose RUN``: why a run falls short, its causes ranked with their evidence (pdrepro.diagnosis).
Top-level imports stay light (the command list is built on every call); the diagnosis is imported when it runs."""

from __future__ import annotations

from pathlib import Path


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "diagnose", help="rank the causes of a run's shortfall, each with its evidence and fix (reads only)",
        description="Read RUN (any kind: a sweep, a smoke, an A/B, a comparison, a load, a tune) and list the causes "
                    "of its gaps (to the published figure, to the line rate and the payload ceiling at the active "
                    "MTU, to the transfer engine alone on the same box), ranked by the share of the largest gap each "
                    "can account for, each with its evidence (file and line, counter, sysfs value, knob) and fix; a "
                    "cause whose evidence shows a fault is listed whatever the gaps, and one the run holds no "
                    "evidence for is listed as unknown. Nothing in RUN is written. Exit 0 when the diagnosis is "
                    "made, whatever it finds; 2 on a folder it cannot read.")
    p.add_argument("run", type=Path, help="run directory")
    p.add_argument("--scenario", help="shipped scenario name or YAML path (default: each run's own scenario.yaml)")
    p.add_argument("--json", action="store_true", help='print {"causes": [...], "unknown": [...], ...} as JSON')
    p.set_defaults(func=run)


def run(args) -> int:
    from ..diagnosis.diagnose import diagnose, render

    found = diagnose(args.run, args.scenario)
    if args.json:
        print(found.model_dump_json(indent=2))
    else:
        print(render(found))
    return 0
