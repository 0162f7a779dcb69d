"""pdrepro doctor: check one node's fabric, GPUs and software before a run."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.errors import UserError

if TYPE_CHECKING:
    from ..fabric.request import PairRequest

MARK = {"pass": "ok", "warn": "WARN", "fail": "FAIL"}


def register(sub) -> None:
    p = sub.add_parser("doctor", help="check this node's RDMA fabric, GPUs, Docker and inputs before a run",
                       description="Check this node's RDMA devices, GIDs, line rate, limits, GPUs, Docker, "
                                   "model, dataset, ports and advertised IP. Exit status 1 when a check fails.")
    p.add_argument("--role", choices=("prefill", "decode"),
                   help="hold the node to what this server of the GPU benchmark needs (without it: laptop/smoke rules)")
    p.add_argument("--sysfs-root", type=Path, default=Path("/sys"),
                   help="read a tree shaped like /sys (a captured copy of a node) instead of /sys")
    p.add_argument("--json", action="store_true", help="print the checks as JSON")
    p.add_argument("--model", type=Path, help="model directory (holds config.json)")
    p.add_argument("--dataset", type=Path, help="ShareGPT JSON file the bench client reads")
    p.add_argument("--advertise-ip", help="address the servers advertise (default: $SGLANG_HOST_IP, $HOST_IP)")
    p.add_argument("--scenario", help="scenario name or file: compares line rate, GPU count and model with it "
                                          "(default: none, no comparison)")
    p.add_argument("--save-sysfs", type=Path, metavar="DIR",
                   help="also save the part of sysfs the checks read into DIR (check it elsewhere with --sysfs-root DIR)")
    p.add_argument("--out", type=Path, metavar="FILE",
                   help="also write this node's record (what --json prints) to FILE, whatever the verdict; a run keeps "
                        "it as RUN/nodes/<role>.json for the pair check and for diagnose")
    p.add_argument("--image", metavar="IMAGE",
                   help="the servers run in IMAGE under compose: record its digest and the SGLang and Mooncake commits "
                        "it carries (asked of this node's Docker engine)")
    p.add_argument("--python", metavar="PYTHON",
                   help="the servers run with PYTHON on the host: record the sglang and Mooncake versions and the "
                        "wheels' CUDA flavour it has (default without --image or --python: not recorded)")
    p.add_argument("--pair", nargs=2, type=Path, metavar=("PREFILL_RECORD", "DECODE_RECORD"),
                   help="check nothing on this node: hold the two nodes' records against each other and refuse the "
                        "launch (exit 1) where they disagree on what both ends must share; 2 on an unreadable record")
    p.add_argument("--deploy", type=Path, metavar="DIR",
                   help="with --pair: read page size, KV layout and TP from the launch `pdrepro render` wrote into DIR "
                        "(instead of --scenario)")
    p.set_defaults(func=run)


def run(given) -> int:
    """The checks ``given`` asks for: its parsed command line, or a runner's typed request (fabric.request), one
    type either way (`pdrepro repro`'s preflight and pair check hand it theirs)."""
    # The checks, the scenario (pydantic, YAML) and the table load when the command runs, not for its --help.
    from tabulate import tabulate

    from ..fabric import doctor
    from ..fabric.capture import capture
    from ..fabric.request import PairRequest, doctor_request
    from ..scenario.model import load_scenario

    args = doctor_request(given)
    if isinstance(args, PairRequest):
        return run_pair(args)
    if args.image and args.python:
        raise UserError("--image and --python: give one (compose runs the servers in an image, the host launcher "
                        "with a Python)")
    if not args.sysfs_root.is_dir():
        raise UserError(f"--sysfs-root {args.sysfs_root}: not a directory; pass /sys or a captured copy of it")
    if args.save_sysfs is not None:
        if args.save_sysfs.exists() and any(args.save_sysfs.iterdir()):
            raise UserError(f"--save-sysfs {args.save_sysfs}: not empty; pick a new directory")
        summary = capture(args.sysfs_root, args.save_sysfs)
        print(f"saved {summary} to {args.save_sysfs}", file=sys.stderr)
    scenario = load_scenario(args.scenario) if args.scenario else None
    ctx = doctor.Context(sysfs_root=args.sysfs_root, role=args.role, scenario=scenario, model=args.model,
                         dataset=args.dataset, advertise_ip=args.advertise_ip,
                         dev_dir=Path("/dev/infiniband") if args.sysfs_root.resolve() == Path("/sys") else None)
    facts = doctor.gather(ctx)
    checks, line_rate = doctor.run_checks(ctx, facts)
    record = None
    if args.json or args.out is not None:
        from ..fabric import noderecord, software  # noqa: PLC0415 - only a record needs them

        found = (software.from_image(args.image) if args.image else software.from_python(args.python)
                 if args.python else software.unknown())
        record = noderecord.build(ctx, facts, checks, line_rate, found)
    if args.out is not None and record is not None:
        from ..core.safewrite import write_file  # noqa: PLC0415

        write_file(args.out, record.model_dump_json(indent=2) + "\n", "doctor --out")
        print(f"node record written to {args.out}", file=sys.stderr)
    if args.json and record is not None:
        print(record.model_dump_json(indent=2))
    else:
        rows = [(MARK[c.status], c.name, c.detail) for c in checks]
        print(tabulate(rows, headers=("", "check", "found"), tablefmt="plain", maxcolwidths=[None, None, 100]))
        fixes = [c for c in checks if c.status != "pass" and c.fix and not c.fix.startswith("see ")]
        if fixes:
            print("\nTo fix:")
            for c in fixes:
                print(f"  {c.name}: {c.fix}")
        fails = sum(c.status == "fail" for c in checks)
        warns = sum(c.status == "warn" for c in checks)
        print(f"\n{len(checks)} checks: {fails} failed, {warns} warnings; "
              f"line rate of active ports {line_rate:.1f} GB/s")
    return 1 if any(c.status == "fail" for c in checks) else 0


def run_pair(args: PairRequest) -> int:
    """--pair: the two records against each other, and the launch's facts; exit 1 on a mismatch."""
    # The pair check's modules load only for it.
    from ..fabric import pair  # noqa: PLC0415
    from ..launch import pairfacts  # noqa: PLC0415
    from ..rundir import noderecord  # noqa: PLC0415
    from ..scenario.model import load_scenario  # noqa: PLC0415

    if args.scenario and args.deploy is not None:
        raise UserError("--scenario and --deploy: give one (the rendered launch already holds the scenario's flags)")
    records = {}
    for role, path in zip(("prefill", "decode"), args.pair):
        record = noderecord.read(path)
        if record.role is not None and record.role != role:
            raise UserError(f"{path}: is the {record.role} node's record, given as the {role} node's; give "
                            "--pair PREFILL_RECORD DECODE_RECORD in that order")
        records[role] = record
    facts = (pairfacts.from_deploy(args.deploy) if args.deploy is not None
             else pairfacts.from_scenario(load_scenario(args.scenario)) if args.scenario else None)
    launch = {name: (facts["prefill"].values[name], facts["decode"].values[name])
              for name, _ in pairfacts.FACTS} if facts else {}
    findings = pair.check(records["prefill"], records["decode"], launch)
    if args.json:
        print(json.dumps({"findings": [f.__dict__ for f in findings],
                          "launch_from": facts["prefill"].source if facts else None}, indent=2))
    else:
        for f in findings:
            print(f.line())
        mismatches = sum(f.outcome == pair.MISMATCH for f in findings)
        unknown = sum(f.outcome == pair.NOT_COMPARED for f in findings)
        where = facts["prefill"].source if facts else "no --scenario or --deploy: page size, KV layout and TP not read"
        verdict = "the launch is refused" if mismatches else "the nodes agree on every fact compared"
        print(f"\npair check: {mismatches} mismatch(es), {unknown} not compared ({where}): {verdict}")
    return 1 if any(f.outcome == pair.MISMATCH for f in findings) else 0
