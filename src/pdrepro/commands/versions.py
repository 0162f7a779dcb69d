"""``pdrepro versions``: the software actually present here, next to the pins."""

from __future__ import annotations

import json


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "versions",
        help="print SGLang, Mooncake, torch, CUDA, driver, RDMA library versions and the pins",
        description="Print the versions of what this machine or image runs (each found or "
        "'not found'), the bundle version and the pinned commits.",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    parser.set_defaults(func=run)


def run(args) -> int:
    # What finds the versions, and the table, load when the command runs, not for its --help.
    from tabulate import tabulate

    from ..image.versions import collect_versions, table_rows

    report = collect_versions()
    if args.json:
        print(json.dumps(report, indent=2, sort_keys=True))
    else:
        print(tabulate(table_rows(report), headers=["component", "version", "detail"]))
    return 0
