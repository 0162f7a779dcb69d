"""``pdrepro knobs``: the environment variables a scenario's launch.env may set, with who reads them."""

from __future__ import annotations

import json

from .. import backends, engines
from ..scenario import knobs, launch_env


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "knobs", help="list the variables a scenario's launch.env may set (reader, default, RDMA-only, source)",
        description="Print the tuning knobs: each environment variable the pinned SGLang's disaggregation path "
                    "and the pinned Mooncake transfer engine read (generated from their source, `make knobs`), "
                    "which module reads it, its default where the source states one, whether it acts only over "
                    "RDMA, and where it is read. Prefixes without a list (UCX_*) and the variables the launch "
                    "plan sets itself (with the option that sets them) follow. Every knob is an environment "
                    "variable: changing one restarts the servers.")
    p.add_argument("--reader", choices=[*engines.names(), *backends.names()],
                   help="only the knobs this engine or backend reads")
    p.add_argument("--rdma-only", action="store_true", help="only the knobs that act only over RDMA")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    p.set_defaults(func=run)


def _reader_of(name: str) -> str | None:
    """The data's reader for an engine or backend name (mooncake_tcp reads Mooncake's list); None for one
    that keeps no list (its prefixes stand for its variables)."""
    file = engines.engine(name).knob_file if name in engines.names() else backends.backend(name).knob_file
    return next((kl.reader for kl in knobs.lists() if file and kl.file.endswith("/" + file)), None)


def _prefixes(name: str) -> tuple[str, ...]:
    part = engines.engine(name) if name in engines.names() else backends.backend(name)
    return tuple(f"{p}*" for p in part.env_prefixes)


def run(args) -> int:
    from tabulate import tabulate  # loads when the command runs, not for its --help

    reader = _reader_of(args.reader) if args.reader else None
    chosen = [k for k in knobs.knobs() if (not args.reader or k.reader == reader) and (k.rdma_only or not args.rdma_only)]
    unlisted = {n: _prefixes(n) for n in (*engines.names(), *backends.names())
                if (not args.reader or n == args.reader)
                and not (engines.engine(n).knob_file if n in engines.names() else backends.backend(n).knob_file)}
    owned = launch_env.plan_owned(engines.engine(engines.names()[0]))
    if args.json:
        print(json.dumps({
            "lists": [{"reader": kl.reader, "source": kl.source, "file": kl.file, "listed_prefixes": kl.listed_prefixes}
                      for kl in knobs.lists()],
            "knobs": [{"name": k.name, "reader": k.reader, "default": k.default, "type": k.type,
                       "rdma_only": k.rdma_only, "only_in": list(k.only_in), "restart": k.restart,
                       "source": k.source} for k in chosen],
            "prefixes_without_list": {n: list(p) for n, p in unlisted.items()},
            "plan_owned": owned}, indent=1))
        return 0
    for kl in knobs.lists():
        rows = [[k.name, k.default if k.default is not None else "-", k.type or "-",
                 "yes" if k.rdma_only else ("only " + "/".join(k.only_in) if k.only_in else "no"),
                 k.source.rsplit(":", 1)[1]] for k in chosen if k.reader == kl.reader]
        if not rows:
            continue
        print(f"{kl.reader} ({kl.reader_kind}): from {kl.source}, every name under "
              f"{', '.join(p + '*' for p in kl.listed_prefixes)} listed ({kl.file})")
        print(tabulate(rows, headers=["variable", "default", "type", "RDMA only", "read in"], tablefmt="simple",
                       disable_numparse=True))
        print()
    if unlisted and not args.rdma_only:
        print("Without a list (any name under the prefix passes): " +
              "; ".join(f"{n}: {', '.join(p)}" for n, p in unlisted.items()))
    if not args.rdma_only:
        print("Set by the launch plan, not launch.env: " + ", ".join(f"{k} ({o})" for k, o in sorted(owned.items())))
        print("Every knob is an environment variable the servers read at start: changing one restarts them.")
    return 0
