"""pdrepro doctor: check one node's fabric, GPUs and software before a run."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..core.errors import UserError

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
    p.set_defaults(func=run)


def run(args) -> int:
    # The checks, the scenario (pydantic, YAML) and the table load when the command runs, not for its --help.
    from tabulate import tabulate

    from ..fabric import doctor
    from ..fabric.capture import capture
    from ..scenario.model import load_scenario

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
    checks, line_rate = doctor.run_checks(ctx)
    if args.json:
        print(json.dumps(doctor.to_json(checks, line_rate), indent=2))
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
