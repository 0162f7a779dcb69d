"""What the fabric gives without SGLang: ib_write_bw per NIC pair (each alone, then all at once), then
Mooncake's transfer_engine_bench GPU to GPU, between this node and a peer.

Both sides run ``pdrepro baseline``: the server side first (it waits), then
the client side, which measures and writes RUN/baseline.json.
"""

from __future__ import annotations

import subprocess
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

from ..core import advice
from ..core.errors import UserError
from ..host.tools import ToolTimeout, capture
from ..parsers import tebench
from ..rundir import BaselineFile, RunDir
from ..rundir.baseline import PerftestRecord, ceiling_problem
from ..rundir.portbaseline import PHASE_WORDS, PHASES, judge_ports
from .baselineplan import (
    TE_BENCH,
    BaselinePlan,
    local_nics,
    perftest_argv,
    progress,
    require_tools,
    save_output,
    tcp_port,
    te_argv,
    te_env,
)
from .perftestruns import run_perftest_client

# Read from here by the command and the tests: the plan and the NICs are this module's interface.
__all__ = ["TE_BENCH", "BaselinePlan", "local_nics", "run_client", "run_server"]


def run_te_client(plan: BaselinePlan) -> dict:
    argv = te_argv(plan, client=True)
    progress(f"transfer_engine_bench: write {'GPU to GPU' if plan.use_vram else 'host to host'} to "
              f"{argv[argv.index('--segment_id') + 1]} for {plan.duration} s ...")
    try:
        proc = capture(argv, timeout=plan.duration + 180, env=te_env(plan))
        text = proc.stdout + proc.stderr
    except ToolTimeout as exc:
        text = exc.output
        save_output(plan.out, "transfer_engine_bench.log", text)
        return {"throughput_GB_s": None, "error": f"no result within {plan.duration + 180} s", "command": argv}
    save_output(plan.out, "transfer_engine_bench.log", text)
    try:
        res = tebench.parse_result(text)
    except ValueError as exc:
        tail = " / ".join(text.strip().splitlines()[-3:]) or "no output"
        why = str(exc) if "Test completed" in text else f"exit {proc.returncode}: {tail}"
        return {"throughput_GB_s": None, "error": why, "command": argv}
    progress(f"  {res.printed} = {res.throughput_GB_s:.2f} GB/s over {res.duration_s:.1f} s")
    if res.note:
        progress(f"  note: {res.note}")
    out = {"throughput_GB_s": round(res.throughput_GB_s, 3), "printed": res.printed, "duration_s": res.duration_s,
           "batch_count": res.batch_count, "use_vram": plan.use_vram, "operation": "write", "command": argv}
    return {**out, "note": res.note} if res.note else out


def run_client(plan: BaselinePlan) -> BaselineFile:
    """Measures, writes RUN/baseline.json after every run, and refuses (UserError, after writing what was
    measured) a ceiling or a port figure no fabric gives, and a port with no figure."""
    result = BaselineFile(schema_version=1, peer=plan.peer,
                          created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                          nics=plan.nics, line_rate_GB_s=round(plan.line_rate_GB_s or 0.0, 3))
    require_tools(plan)
    if plan.out is not None:
        plan.out.mkdir(parents=True, exist_ok=True)

    def save(record: PerftestRecord) -> None:
        result.ib_write_bw = record
        _write(plan.out, result)

    if not plan.skip_perftest:
        run_perftest_client(plan, save)
    if not plan.skip_te:
        result.transfer_engine_bench = run_te_client(plan)
    te = (result.transfer_engine_bench or {}).get("throughput_GB_s")
    ib = result.ib_write_bw.aggregate_GB_s if result.ib_write_bw is not None else None
    # The report's "measured ceiling": what Mooncake itself moves GPU to GPU,
    # else what the NICs move with verbs alone.
    if te is not None:
        result.baseline_GB_s, result.baseline_source = te, "transfer_engine_bench"
    elif ib is not None:
        result.baseline_GB_s, result.baseline_source = ib, "ib_write_bw"
    else:
        result.baseline_GB_s, result.baseline_source = None, None
    where = RunDir(plan.out).baseline_outputs_dir if plan.out is not None else "the tool's output"
    # A port first: its name says where to look, where the sum over the ports would not.
    bad = [v for v in judge_ports(result.ports(), plan.min_port_fraction) if v.state in ("unmeasured", "contradiction")]
    refusals = [f"{v.detail}; its output is under {where}" for v in bad]
    problem = ceiling_problem(result.baseline_GB_s, plan.line_rate_GB_s)
    if problem is not None:
        # Kept for whoever reads the raw outputs, but as no ceiling: the analysis must not draw one.
        result.baseline_GB_s, result.refused = None, f"{result.baseline_source}: {problem}"
        refusals.append(f"{result.baseline_source} measured {problem}; no ceiling recorded: check the NICs it used "
                        f"and the tool's raw output ({where})")
    impossible = [v for v in bad if v.state == "contradiction"]
    if impossible and result.baseline_source == "ib_write_bw" and result.baseline_GB_s is not None:
        # A sum that holds a figure no port gives is no ceiling either.
        result.baseline_GB_s, result.refused = None, f"ib_write_bw: {impossible[0].detail}"
    _write(plan.out, result)
    if refusals:
        more = f" (and {len(refusals) - 1} more)" if len(refusals) > 1 else ""
        kept = RunDir(plan.out).baseline_file if plan.out is not None else "no file"
        again = advice.baseline(plan.out, plan.peer) if plan.out is not None and plan.peer else advice.baseline(advice.RUN)
        raise UserError(f"{refusals[0]}{more}; what was measured is kept in {kept}; check the port and the peer's "
                        f"`{advice.baseline_server()}` (same NICs), then run `{again}` again")
    return result


def _write(out: Path | None, result: BaselineFile) -> None:
    if out is not None:
        RunDir(out).write_baseline(result)


def run_server(plan: BaselinePlan) -> int:
    procs: list[tuple[str, subprocess.Popen]] = []
    te: subprocess.Popen | None = None
    require_tools(plan)
    try:
        # One listener per pair and run (tcp_port): the client takes them alone in turn, then all at once.
        for phase in () if plan.skip_perftest else PHASES:
            for i, nic in enumerate(plan.nics):
                argv = perftest_argv(plan, tcp_port(plan, phase, i), nic, client=False)
                procs.append((f"ib_write_bw {nic} {PHASE_WORDS[phase]}",
                              subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)))
        if procs:
            n = len(plan.nics)
            progress(f"ib_write_bw servers on {', '.join(plan.nics)} (ports {plan.base_port}..{plan.base_port + n - 1} "
                      f"each alone, {plan.base_port + n}..{plan.base_port + 2 * n - 1} all at once); waiting for "
                      "the client")
        if not plan.skip_te:
            # Pinning the RPC port range to one port makes the segment id predictable for the client.
            env = te_env(plan, MC_MIN_RPC_PORT=str(plan.te_port), MC_MAX_RPC_PORT=str(plan.te_port))
            te = subprocess.Popen(te_argv(plan, client=False), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  text=True, env=env)
            segment = _wait_segment(te, timeout=60)
            threading.Thread(target=_drain, args=(te,), daemon=True).start()
            progress(f"transfer_engine_bench target up: segment {segment} (the client's --segment-id)")
        for name, proc in procs:
            proc.communicate(timeout=plan.serve_seconds)
            progress(f"{name}: finished (exit {proc.returncode})")
        if te is not None:
            progress(f"target stays up for {plan.serve_seconds} s or until Ctrl-C")
            try:
                te.wait(timeout=plan.serve_seconds)
            except subprocess.TimeoutExpired:
                pass
        return 0
    except subprocess.TimeoutExpired:
        raise UserError(f"the client did not connect within {plan.serve_seconds} s; start "
                        f"`{advice.baseline(advice.RUN)}` on the other node ({advice.PEER}: this host's address), "
                        "or raise --serve-seconds") from None
    finally:
        for _, proc in procs + ([("te", te)] if te is not None else []):
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()


def _drain(proc: subprocess.Popen) -> None:
    assert proc.stdout is not None, "started with stdout=PIPE"
    for _ in proc.stdout:
        pass


def _wait_segment(proc: subprocess.Popen, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    seen = []
    assert proc.stdout is not None, "started with stdout=PIPE"
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            if proc.poll() is not None:
                break
            continue
        seen.append(line)
        segment = tebench.parse_segment(line)
        if segment:
            return segment
    tail = " / ".join(l.strip() for l in seen[-3:]) or "no output"
    raise UserError(f"transfer_engine_bench target did not start (exit {proc.poll()}): {tail}; "
                    "check /dev/infiniband, memlock and GPU registration with `pdrepro doctor`")
