"""Runs `pdrepro` (``cli ARGV...``) or the arms runner itself (``arms RUN SPEC.json``) in a child process, as a user
would, with the sweep stage standing in: the stand-in servers answer /health but no bench client runs against
them here, so `pdrepro sweep` is replaced by a fixture that checks the stack it is given is up (its router
answers /health), records its URLs, and writes a run folder built by tests/runbuilder.py in the formats SGLang
writes. Stack up and stack down are the real commands, on real processes.

The fixture sweep reads the environment:
  ARMS_FAKE_LOG=<file>          one line per sweep: arm, router, prefill, decode
  ARMS_FAKE_WAIT=<arm>          that arm's sweep says "SWEEP <arm> waiting" and waits, under the sweep's own
                                signal handling (a signal ends it with 128 + its number)
  ARMS_FAKE_SIGNAL_AFTER=<arm>  that arm's sweep sends its own process SIGTERM as it returns 0 (a signal
                                that lands between two stages)
  ARMS_FAKE_SIGNAL_IN_TAIL=<arm>  that arm's sweep, once every length is written, gets a real SIGTERM under the
                                sweep's own signal handling (as one landing while the sweep copies its logs or
                                analyses): it ends 143 with every length measured
  ARMS_FAKE_STATUS=<arm>:<n>    that arm's sweep ends with n, writing nothing
  ARMS_FAKE_TTFT=<arm>:<x>      that arm's TTFT is x times the base figures
  ARMS_FAKE_TRANSPORT=1         every arm's server logs state its backend's transport over TCP (Mooncake's
                                forced-TCP lines, or NIXL's start-up and a UCX lane line): its transport check passes
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import tempfile
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from memberhelp import member  # noqa: E402
from runbuilder import Row, build_run, sweep_provenance  # noqa: E402

from pdrepro import arms  # noqa: E402
from pdrepro.commands import memberwords, run_command  # noqa: E402
from pdrepro.commands import sweep as sweep_command  # noqa: E402
from pdrepro.commands.requests import STAGES  # noqa: E402
from pdrepro.core import signals  # noqa: E402
from pdrepro.scenario.model import load_scenario  # noqa: E402


def _pick(var: str, arm: str) -> str | None:
    for item in os.environ.get(var, "").split(","):
        name, _, value = item.partition(":")
        if name == arm:
            return value or "1"
    return None


def base_rows(lens) -> list[Row]:
    """Base figures per length: TTFT and transfer grow with the prompt (transfer well inside TTFT)."""
    return [Row(L, 20.0 + L / 50, 4.0 + L / 200) for L in lens]


# NIXL's start-up line and a UCX lane line over TCP, in the formats parsers/nixl_log documents (a fixture).
_NIXL = ["[2026-07-15 10:11:12] NIXL KVManager initialized with backend: UCX",
         "[1784110272.0] [host:1:0] ucp_worker.c:2041 UCX  INFO  ep cfg#2 rma_am(tcp/lo) am(tcp/lo tcp/eth0)"]


def _state_transport(run: Path, scenario) -> None:
    """The transport lines the real servers print, after each log's first line."""
    from fakecluster import mooncake_startup

    nixl = scenario.launch is not None and scenario.launch.transfer_backend == "nixl"
    for log in (run / "logs").glob("*.log"):
        lines = log.read_text().splitlines(keepends=True)
        lines[1:1] = [line + "\n" for line in (_NIXL if nixl else mooncake_startup("force-tcp"))]
        log.write_text("".join(lines))


def fake_sweep(args) -> int:
    out = Path(args.out) / (args.configuration or "")
    arm = out.name
    with urllib.request.urlopen(f"{args.router}/health", timeout=10) as answer:
        assert answer.status == 200
    if os.environ.get("ARMS_FAKE_LOG"):
        with open(os.environ["ARMS_FAKE_LOG"], "a") as log:
            log.write(f"{arm} {args.router} {args.prefill} {args.decode}\n")
    status = _pick("ARMS_FAKE_STATUS", arm)
    if status is not None:
        return int(status)
    if _pick("ARMS_FAKE_WAIT", arm):
        with signals.stop_on_signals():
            print(f"SWEEP {arm} waiting", flush=True)
            signals.sleep(60)
    scenario = load_scenario(args.scenario)
    factor = float(_pick("ARMS_FAKE_TTFT", arm) or 1.0)
    rows = [Row(r.prompt_len, r.ttft_ms * factor, r.transfer_ms) for r in base_rows(scenario.sweep.prompt_lens)]
    with tempfile.TemporaryDirectory() as tmp:
        tcp = bool(os.environ.get("ARMS_FAKE_TRANSPORT"))
        built = build_run(Path(tmp) / "run", scenario, rows=rows,
                          **({"provenance": sweep_provenance(scenario, proven=False)} if tcp else {}))
        if tcp:
            _state_transport(built.root, scenario)
        for item in built.root.iterdir():
            target = out / item.name
            if item.is_dir() and target.is_dir():
                for f in item.iterdir():
                    os.replace(f, target / f.name)  # a new file: the servers keep writing into the old one
            else:
                shutil.move(str(item), str(target))
    if _pick("ARMS_FAKE_SIGNAL_IN_TAIL", arm):
        with signals.stop_on_signals():
            os.kill(os.getpid(), signal.SIGTERM)
            signals.sleep(30)
    if _pick("ARMS_FAKE_SIGNAL_AFTER", arm):
        os.kill(os.getpid(), signal.SIGTERM)
    return 0


def main() -> int:
    sweep_command.run = fake_sweep
    if sys.argv[1] == "cli":
        return run_command(sys.argv[2:])
    spec, run = json.loads(Path(sys.argv[3]).read_text()), Path(sys.argv[2])
    try:
        given = [member(run, a["name"], a["stack"], a["sweep"]) for a in spec["arms"]]
        # A resume compares meaning, as the commands do (commands.memberwords), unless the spec asks for the words.
        same = None if spec.get("literal") else memberwords.differ(run)
        return arms.run_arms(run, spec["label"], given, command=spec.get("command", "ab"), stages=STAGES,
                             differ=same)
    except Exception as exc:  # the CLI's own translation of a refused input, as run_command does it
        from pdrepro.core.errors import UserError

        if isinstance(exc, UserError):
            print(f"arms: error: {exc}", file=sys.stderr)
            return 2
        raise


if __name__ == "__main__":
    sys.exit(main())
