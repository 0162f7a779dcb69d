"""The SLURM script with the smoke's two sides in place of the GPU servers.

Same renderer, same shape as the GPU job: the allocation's first node runs the
prefill side (the smoke target, holding the KV-sized buffer), the next node
the decode side (the initiator, pulling it through the Mooncake Transfer
Engine), the script waits for the prefill side's control endpoint as it waits
for the router, and the gate checks every transfer's checksum. The software is
the smoke image's, started on each node with Docker like the GPU image
(runtime ``docker``), or run directly on nodes that hold it (``host``), as on
the local test cluster of ``make slurm-smoke``.

  python -m pdrepro.launch.targets.slurm_smoke render --out JOB.sbatch [--prompt-lens 128,4096]
  python -m pdrepro.launch.targets.slurm_smoke check RAW_DIR
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from ...core import runfile
from ...core.cliargs import prompt_lens
from ...core.errors import UserError
from ...core.pins import load_pins
from ...core.safewrite import write_file
from ...core.units import MiB
from .slurm import Job, Step, host_ref, node_ref, render

CONTROL_PORT, DATA_PORT = 18080, 18081
AGENT = ("python3", "-m", "pdrepro.smoke.agent")


def smoke_job(scenario, plan, transport: str = "tcp", timeout_s: int = 300, runtime: str = "docker") -> Job:
    prefill_ip, decode_ip = host_ref("prefill", 0), host_ref("decode", 0)
    common = (("SMOKE_PLAN", plan.to_json()), ("SMOKE_TRANSPORT", transport), ("SMOKE_RESULTS", "$JOB_DIR/raw"),
              ("SMOKE_CONTROL_PORT", str(CONTROL_PORT)), ("SMOKE_DATA_PORT", str(DATA_PORT)),
              ("SMOKE_TIMEOUT_S", str(timeout_s)))
    target = Step("prefill-0", node_ref("prefill", 0), (*AGENT, "target"),
                  (*common, ("SMOKE_HOST_IP", prefill_ip)))
    initiator = Step("decode-0", node_ref("decode", 0), (*AGENT, "initiator"),
                     (*common, ("SMOKE_HOST_IP", decode_ip), ("SMOKE_PEER", prefill_ip)))
    check = Step("gates", "-", ("python3", "-m", "pdrepro.launch.targets.slurm_smoke", "check", "$JOB_DIR/raw"))
    settings = (
        ("RUNTIME", runtime, "docker | pyxis | host (nodes holding the smoke image's software)"),
        ("IMAGE", load_pins()["SMOKE_IMAGE"], "the smoke image, for docker and pyxis"),
        ("NET_IFACE", "", "netdev whose IPv4 the sides advertise; empty: the node name's address"),
        ("JOB_DIR", "$SLURM_SUBMIT_DIR/slurm-$SLURM_JOB_ID", "raw/ and logs/ of this job, shared"),
        ("MEMLOCK", "-1", ""),
        ("READY_TIMEOUT_S", "120", ""),
        ("STOP_GRACE_S", "10", ""),
    )
    return Job(
        name=f"pdrepro-smoke-{scenario.name}",
        title=f"pdrepro: the smoke ({scenario.name}) as a 2-node SLURM job, the smoke's sides in place of the servers",
        prefill_nodes=1, decode_nodes=1, servers=(target,),
        ready_url=f"http://{prefill_ip}:{CONTROL_PORT}/", client=(initiator, check), settings=settings,
        time="00:15:00",
    )


def check(raw: Path, wait_s: float = 30) -> tuple[int, list[str]]:
    """Exit code and lines: 0 when every transfer of every size matched its checksum."""
    # The prefill side writes its file once told the transfers are done, a moment
    # after the decode side (whose step the gate follows) has finished.
    deadline = time.monotonic() + wait_s
    while (raw / "initiator.json").is_file() and not (raw / "target.json").is_file() and time.monotonic() < deadline:
        time.sleep(0.2)
    try:
        initiator = runfile.read_json(raw / "initiator.json")
        target = runfile.read_json(raw / "target.json")
    except FileNotFoundError as exc:
        raise UserError(f"{exc.filename}: missing; the smoke's sides did not write their results") from None
    except ValueError as exc:
        raise UserError(f"{raw}: a result file is not JSON ({exc})") from None
    lines, ok = [], True
    if initiator.get("error"):
        lines.append(f"decode side error: {initiator['error']}")
        ok = False
    if not target.get("finished"):
        lines.append("the prefill side was never told the transfers finished")
        ok = False
    rows = initiator.get("rows") or []
    if not rows:
        lines.append("no transfer was measured")
        ok = False
    peer = initiator.get("target_evidence", {})
    for r in rows:
        good = all(r[k]["verified"] and r[k]["failed_checks"] == 0 and r[k]["ms"] for k in ("mooncake", "socket"))
        ok = ok and good
        lines.append(f"{r['prompt_len']:>6} tokens {r['kv_bytes']:>11} B: {len(r['mooncake']['ms'])} Mooncake + "
                     f"{len(r['socket']['ms'])} socket transfers, checksums {'match' if good else 'DIFFER'}")
    lines.append(f"transport: decode {initiator.get('evidence', {}).get('transport')}, prefill {peer.get('transport')}")
    return (0 if ok else 1), lines


def main(argv: list[str] | None = None) -> int:
    from ...scenario.model import load_scenario
    from ...scenario.smokeplan import make_plan

    parser = argparse.ArgumentParser(prog="python -m pdrepro.launch.targets.slurm_smoke")
    sub = parser.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("render", help="write the smoke's sbatch script")
    r.add_argument("--out", required=True, type=Path)
    r.add_argument("--scenario", default="smoke-tcp", help="scenario of the smoke run (default %(default)s)")
    r.add_argument("--prompt-lens", default="128,4096,32768")
    r.add_argument("--repeats", type=int, default=2)
    r.add_argument("--block-mib", type=int, default=32)
    r.add_argument("--timeout", type=int, default=300)
    r.add_argument("--runtime", choices=("docker", "pyxis", "host"), default="docker")
    c = sub.add_parser("check", help="verify the sides' results (exit 1 when a checksum differs)")
    c.add_argument("raw", type=Path)
    args = parser.parse_args(argv)
    try:
        if args.cmd == "render":
            scenario = load_scenario(args.scenario)
            plan = make_plan(scenario, prompt_lens(args.prompt_lens), repeats=args.repeats, block_bytes=args.block_mib * MiB)
            args.out.parent.mkdir(parents=True, exist_ok=True)
            write_file(args.out, render(smoke_job(scenario, plan, timeout_s=args.timeout, runtime=args.runtime)), "--out")
            print(f"wrote {args.out}")
            return 0
        code, lines = check(args.raw)
        for line in lines:
            print(f"check: {line}")
        print(f"check: {'every checksum matches' if code == 0 else 'FAILED'}")
        return code
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
