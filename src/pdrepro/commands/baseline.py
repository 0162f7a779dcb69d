"""pdrepro baseline: measure the fabric between two nodes without SGLang."""

from __future__ import annotations

import shlex
from pathlib import Path

from ..core.errors import UserError

# The default only: the fabric's measurements and the run directory (pydantic) are imported where the command runs,
# so that building the command line (`pdrepro --help`) stays light.
from ..scenario.portbaseline import MIN_PORT_BASELINE_FRACTION as DEFAULT_FRACTION


def _names(text: str | None) -> list[str] | None:
    return [n for n in text.split(",") if n] if text else None


def register(sub) -> None:
    p = sub.add_parser("baseline", help="measure the fabric ceiling: ib_write_bw per NIC pair, transfer_engine_bench GPU to GPU",
                       description="Run on both nodes: first `--role server` on one, then `--role client --peer <server>` "
                                   "on the other. The client runs ib_write_bw on each NIC pair alone, one after the "
                                   "other, then on all pairs at once, and Mooncake's transfer_engine_bench GPU to GPU, "
                                   "and writes RUN/baseline.json (decimal GB/s). Each port must reach "
                                   "--min-port-fraction of its own line rate both ways. Exit 0: every port does; 1: a "
                                   "port falls short, or nothing was measured; 2: bad input, a port with no figure or "
                                   "one above its line rate (what was measured is kept).")
    p.add_argument("--peer", help="the other node's address (required for the client)")
    p.add_argument("--role", choices=("server", "client"), default="client")
    p.add_argument("--out", type=Path, help="run directory to write baseline.json and raw outputs into (client)")
    p.add_argument("--nics", help="comma list of local RDMA devices (default: every device with an ACTIVE port)")
    p.add_argument("--remote-nics", help="comma list of the peer's devices, paired in order (default: same names)")
    p.add_argument("--sysfs-root", type=Path, default=Path("/sys"), help="read a tree shaped like /sys instead of /sys")
    p.add_argument("--duration", type=int, default=10, help="seconds per measurement (default 10)")
    p.add_argument("--msg-bytes", type=int, default=65536, help="ib_write_bw message size (default 65536, Mooncake's slice size)")
    p.add_argument("--qps", type=int, default=4, help="ib_write_bw queue pairs per NIC (default 4)")
    p.add_argument("--base-port", type=int, default=18515,
                   help="ib_write_bw TCP port of the first NIC pair alone (next pairs +1, then one per pair all at once)")
    p.add_argument("--te-port", type=int, default=16999, help="transfer_engine_bench target RPC port (default 16999)")
    p.add_argument("--segment-id", help="target segment HOST:PORT (default PEER:TE_PORT)")
    p.add_argument("--host-memory", action="store_true", help="move host memory instead of GPU memory (soft-RoCE, no GPU)")
    p.add_argument("--te-args", default="", help="extra transfer_engine_bench flags, quoted as one string")
    p.add_argument("--min-port-fraction", type=float, default=DEFAULT_FRACTION,
                   help=f"share of its own line rate each port must reach, alone and all at once (default "
                        f"{DEFAULT_FRACTION:g}, the scenario thresholds' min_port_baseline_fraction, which "
                        "`pdrepro check` applies)")
    p.add_argument("--skip-perftest", action="store_true", help="do not run ib_write_bw")
    p.add_argument("--skip-te", action="store_true", help="do not run transfer_engine_bench")
    p.add_argument("--serve-seconds", type=int, default=900, help="how long the server waits for the client (default 900)")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..fabric import baseline
    from ..rundir import RunDir
    from ..rundir.portbaseline import judge_ports

    if args.role == "client" and not args.peer:
        raise UserError("--peer HOST is required for the client: the address of the node running --role server")
    if args.role == "client" and args.out is None:
        raise UserError("--out RUN is required for the client: the run directory that gets baseline.json")
    if args.skip_perftest and args.skip_te:
        raise UserError("--skip-perftest and --skip-te together leave nothing to measure; drop one")
    for flag in ("duration", "msg_bytes", "qps"):
        if getattr(args, flag) < 1:
            raise UserError(f"--{flag.replace('_', '-')} must be >= 1, got {getattr(args, flag)}")
    if not 0 < args.min_port_fraction <= 1:  # NaN fails this too
        raise UserError(f"--min-port-fraction must be above 0 and at most 1, got {args.min_port_fraction}")
    nics, gids, rates = baseline.local_nics(args.sysfs_root, _names(args.nics))
    rate = sum(rates.values())
    remote = _names(args.remote_nics) or nics
    if len(remote) != len(nics):
        raise UserError(f"--remote-nics lists {len(remote)} devices for {len(nics)} local ones ({', '.join(nics)}); "
                        "give one per local NIC, in the same order")
    plan = baseline.BaselinePlan(peer=args.peer or "", role=args.role, nics=nics, remote_nics=remote, gid_index=gids,
                         out=args.out, duration=args.duration, msg_bytes=args.msg_bytes, qps=args.qps,
                         base_port=args.base_port, te_port=args.te_port, segment_id=args.segment_id,
                         use_vram=not args.host_memory, te_args=shlex.split(args.te_args),
                         skip_perftest=args.skip_perftest, skip_te=args.skip_te, serve_seconds=args.serve_seconds,
                         line_rate_GB_s=rate, port_rates=rates, min_port_fraction=args.min_port_fraction)
    if args.role == "server":
        return baseline.run_server(plan)
    result = baseline.run_client(plan)
    ceiling = result.baseline_GB_s
    print(f"wrote {RunDir(args.out).baseline_file}")
    if ceiling is None:
        print("no measurement succeeded; the raw outputs are under " f"{RunDir(args.out).baseline_outputs_dir}")
        return 1
    pct = 100 * ceiling / rate if rate else 0
    print(f"measured ceiling {ceiling:.2f} GB/s ({result.baseline_source}) = {pct:.1f} % of the "
          f"{rate:.1f} GB/s line rate of the NICs used")
    # run_client refused a port with no figure or an impossible one; what is left passes or falls short.
    short = [v for v in judge_ports(result.ports(), args.min_port_fraction) if not v.passed]
    for v in short:
        print(f"FAIL {v.detail}")
    if short:
        print(f"{len({v.port for v in short})} port(s) short of {100 * args.min_port_fraction:g} % of line rate; "
              "`pdrepro check` and the report name them too")
        return 1
    if result.ib_write_bw is not None:
        print(f"every port at least {100 * args.min_port_fraction:g} % of its line rate, alone and all at once")
    return 0
