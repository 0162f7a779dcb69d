"""What the fabric gives without SGLang: ib_write_bw per NIC pair, then Mooncake's
transfer_engine_bench GPU to GPU, between this node and a peer.

Both sides run ``pdrepro baseline``: the server side first (it waits), then
the client side, which measures and writes RUN/baseline.json.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from ..core.errors import UserError
from ..core.safewrite import write_file
from ..host import sysfs
from ..host.tools import ToolTimeout, capture
from ..parsers import perftest, tebench
from ..rundir import BaselineFile, RunDir
from ..rundir.baseline import ceiling_problem
from . import affinity, gid

IB_WRITE_BW = "ib_write_bw"
TE_BENCH = "transfer_engine_bench"
INSTALL_PERFTEST = "install perftest (Debian/Ubuntu: `apt-get install perftest`; the runtime image has it)"
INSTALL_TE = ("transfer_engine_bench ships in the Mooncake wheel built with CUDA (the runtime image has it); "
              "run baseline inside that image with --network host and /dev/infiniband")


@dataclass
class BaselinePlan:
    """One `pdrepro baseline` run: which NIC pairs, which tools, how long."""
    peer: str
    role: str
    nics: list[str]
    remote_nics: list[str]
    gid_index: dict[str, int]
    out: Path | None = None
    duration: int = 10
    msg_bytes: int = 65536
    qps: int = 4
    base_port: int = 18515
    te_port: int = 16999
    segment_id: str | None = None
    use_vram: bool = True
    te_args: list[str] = field(default_factory=list)
    serial: bool = False     # one NIC pair at a time instead of all at once
    skip_perftest: bool = False
    skip_te: bool = False
    serve_seconds: int = 900
    line_rate_GB_s: float | None = None


def local_nics(root: Path, wanted: list[str] | None) -> tuple[list[str], dict[str, int], float]:
    """Active NICs (or the WANTED ones, checked), the GID index Mooncake would pick on each, their line rate."""
    devices = {d.name: d for d in sysfs.read_rdma_devices(root)}
    active = [d.name for d in affinity.usable_nics(list(devices.values()))]
    if wanted:
        unknown = [n for n in wanted if n not in devices]
        if unknown:
            raise UserError(f"--nics: {', '.join(unknown)} not found under {root}/class/infiniband "
                            f"(have: {', '.join(devices) or 'none'})")
        down = [n for n in wanted if n not in active]
        if down:
            raise UserError(f"--nics: {', '.join(down)} has no ACTIVE port; bring it up or leave it out")
        active = list(wanted)
    if not active:
        raise UserError(f"no RDMA device with an ACTIVE port under {root}/class/infiniband; "
                        "run `pdrepro doctor` to see why (soft-RoCE: scripts/softroce.sh up)")
    gids, rate = {}, 0.0
    for name in active:
        port = next(p for p in devices[name].ports if p.is_active)
        choice = gid.pick(port)
        if choice is None:
            raise UserError(f"{name}: no usable RoCE v2/IB GID; give its netdev an IP address (`pdrepro doctor` shows the GIDs)")
        gids[name] = choice.index
        rate += port.rate_GB_s
    return active, gids, rate


def _progress(msg: str) -> None:
    print(msg, flush=True)


def perftest_argv(plan: BaselinePlan, i: int, nic: str, client: bool) -> list[str]:
    argv = [IB_WRITE_BW, "-d", nic, "-x", str(plan.gid_index[nic]), "-p", str(plan.base_port + i),
            "-s", str(plan.msg_bytes), "-q", str(plan.qps), "-D", str(plan.duration), "--report_gbits", "-F"]
    return argv + [plan.peer] if client else argv


def te_argv(plan: BaselinePlan, client: bool) -> list[str]:
    argv = [TE_BENCH, "--mode", "initiator" if client else "target", "--metadata_server", "P2PHANDSHAKE",
            "--protocol", "rdma", "--device_name", ",".join(plan.nics)]
    if plan.use_vram:
        # One buffer on every GPU ("cuda:N"). Without discovery the bench's NIC
        # table names only cuda:0, so buffers on other GPUs find no NIC; with it
        # each GPU gets its nearest NICs, as in SGLang, and te_env limits the
        # NICs to the measured ones.
        argv += ["--auto_discovery", "--use_vram", "--gpu_id", "-1"]
    if client:
        argv += ["--segment_id", plan.segment_id or f"{plan.peer}:{plan.te_port}", "--operation", "write",
                 "--duration", str(plan.duration), "--report_unit", "GB"]
    return argv + plan.te_args


def te_env(plan: BaselinePlan, **extra: str) -> dict[str, str]:
    """The bench's environment: discovery sees only the NICs being measured."""
    return dict(os.environ, MC_TE_FILTERS=",".join(plan.nics), **extra)


def _require(tool: str, how: str) -> None:
    if shutil.which(tool) is None:
        raise UserError(f"{tool} not found on PATH; {how}, or skip it with --skip-{'perftest' if tool == IB_WRITE_BW else 'te'}")


def _require_tools(plan: BaselinePlan) -> None:
    """Both tools checked before either runs, so a missing one stops the run before any measuring."""
    if not plan.skip_perftest:
        _require(IB_WRITE_BW, INSTALL_PERFTEST)
    if not plan.skip_te:
        _require(TE_BENCH, INSTALL_TE)


def _save(out: Path | None, name: str, text: str) -> None:
    if out is not None:
        folder = RunDir(out).baseline_outputs_dir
        folder.mkdir(parents=True, exist_ok=True)
        write_file(folder / name, text, "baseline", out)


def run_perftest_client(plan: BaselinePlan) -> dict:
    pairs = list(zip(plan.nics, plan.remote_nics))
    mode = "one pair at a time" if plan.serial else "all pairs at once"
    _progress(f"ib_write_bw: {len(pairs)} NIC pair(s), {mode}, {plan.msg_bytes} B messages, {plan.qps} QPs, "
              f"{plan.duration} s ...")
    started = []

    def start(i: int, nic: str):
        argv = perftest_argv(plan, i, nic, client=True)
        return nic, argv, subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    if not plan.serial:
        started = [start(i, nic) for i, (nic, _) in enumerate(pairs)]
    results, errors = [], []
    for i, (nic, remote) in enumerate(pairs):
        nic, argv, proc = start(i, nic) if plan.serial else started[i]
        try:
            text, _ = proc.communicate(timeout=plan.duration + 120)
        except subprocess.TimeoutExpired:
            proc.kill()
            text = proc.communicate()[0]
            errors.append(f"{nic}: no result within {plan.duration + 120} s")
        _save(plan.out, f"ib_write_bw-{nic}.txt", text)
        try:
            bw = perftest.parse_bw(text)
        except ValueError:
            tail = " / ".join(text.strip().splitlines()[-2:]) or "no output"
            errors.append(f"{nic}: exit {proc.returncode}: {tail}")
            continue
        _progress(f"  {nic} -> {plan.peer}:{remote}: {bw.average_Gb_s:.1f} Gb/s = {bw.average_GB_s:.2f} GB/s (average)")
        results.append({"local": nic, "remote": remote, "msg_bytes": bw.msg_bytes, "qps": plan.qps,
                        "bw_average_GB_s": round(bw.average_GB_s, 3), "bw_peak_GB_s": round(bw.peak_GB_s, 3),
                        "bw_average_Gb_s": round(bw.average_Gb_s, 2), "printed_unit": bw.unit_printed,
                        "command": argv})
    total = sum(r["bw_average_GB_s"] for r in results)
    if results:
        _progress(f"  aggregate: {total:.2f} GB/s")
    # Run one at a time, the sum is what the NICs give alone, not together.
    return {"pairs": results, "aggregate_GB_s": round(total, 3) if results else None, "errors": errors,
            "mode": "serial" if plan.serial else "concurrent",
            "unit": "decimal GB/s (perftest Gb/sec / 8; its MB/sec would be MiB/s)"}


def run_te_client(plan: BaselinePlan) -> dict:
    argv = te_argv(plan, client=True)
    _progress(f"transfer_engine_bench: write {'GPU to GPU' if plan.use_vram else 'host to host'} to "
              f"{argv[argv.index('--segment_id') + 1]} for {plan.duration} s ...")
    try:
        proc = capture(argv, timeout=plan.duration + 180, env=te_env(plan))
        text = proc.stdout + proc.stderr
    except ToolTimeout as exc:
        text = exc.output
        _save(plan.out, "transfer_engine_bench.log", text)
        return {"throughput_GB_s": None, "error": f"no result within {plan.duration + 180} s", "command": argv}
    _save(plan.out, "transfer_engine_bench.log", text)
    try:
        res = tebench.parse_result(text)
    except ValueError as exc:
        tail = " / ".join(text.strip().splitlines()[-3:]) or "no output"
        why = str(exc) if "Test completed" in text else f"exit {proc.returncode}: {tail}"
        return {"throughput_GB_s": None, "error": why, "command": argv}
    _progress(f"  {res.printed} = {res.throughput_GB_s:.2f} GB/s over {res.duration_s:.1f} s")
    if res.note:
        _progress(f"  note: {res.note}")
    out = {"throughput_GB_s": round(res.throughput_GB_s, 3), "printed": res.printed, "duration_s": res.duration_s,
           "batch_count": res.batch_count, "use_vram": plan.use_vram, "operation": "write", "command": argv}
    return {**out, "note": res.note} if res.note else out


def run_client(plan: BaselinePlan) -> BaselineFile:
    result = BaselineFile(schema_version=1, peer=plan.peer,
                          created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                          nics=plan.nics, line_rate_GB_s=round(plan.line_rate_GB_s or 0.0, 3))
    _require_tools(plan)
    if plan.out is not None:
        plan.out.mkdir(parents=True, exist_ok=True)
    if not plan.skip_perftest:
        result.ib_write_bw = run_perftest_client(plan)
        _write(plan.out, result)
    if not plan.skip_te:
        result.transfer_engine_bench = run_te_client(plan)
    te = (result.transfer_engine_bench or {}).get("throughput_GB_s")
    ib = (result.ib_write_bw or {}).get("aggregate_GB_s")
    # The report's "measured ceiling": what Mooncake itself moves GPU to GPU,
    # else what the NICs move with verbs alone.
    if te is not None:
        result.baseline_GB_s, result.baseline_source = te, "transfer_engine_bench"
    elif ib is not None:
        result.baseline_GB_s, result.baseline_source = ib, "ib_write_bw"
    else:
        result.baseline_GB_s, result.baseline_source = None, None
    problem = ceiling_problem(result.baseline_GB_s, plan.line_rate_GB_s)
    if problem is not None:
        # Kept for whoever reads the raw outputs, but as no ceiling: the analysis must not draw one.
        result.baseline_GB_s, result.refused = None, f"{result.baseline_source}: {problem}"
        _write(plan.out, result)
        where = RunDir(plan.out).baseline_outputs_dir if plan.out is not None else "the tool's output"
        raise UserError(f"{result.baseline_source} measured {problem}; no ceiling recorded: check the NICs it used "
                        f"and the tool's raw output ({where}), then run `pdrepro baseline` again")
    _write(plan.out, result)
    return result


def _write(out: Path | None, result: BaselineFile) -> None:
    if out is not None:
        RunDir(out).write_baseline(result)


def run_server(plan: BaselinePlan) -> int:
    procs: list[tuple[str, subprocess.Popen]] = []
    te: subprocess.Popen | None = None
    _require_tools(plan)
    try:
        for i, nic in enumerate([] if plan.skip_perftest else plan.nics):
            argv = perftest_argv(plan, i, nic, client=False)
            procs.append((f"ib_write_bw {nic}", subprocess.Popen(argv, stdout=subprocess.PIPE,
                                                                 stderr=subprocess.STDOUT, text=True)))
        if procs:
            _progress(f"ib_write_bw servers on {', '.join(plan.nics)} (ports {plan.base_port}.."
                      f"{plan.base_port + len(plan.nics) - 1}); waiting for the client")
        if not plan.skip_te:
            # Pinning the RPC port range to one port makes the segment id predictable for the client.
            env = te_env(plan, MC_MIN_RPC_PORT=str(plan.te_port), MC_MAX_RPC_PORT=str(plan.te_port))
            te = subprocess.Popen(te_argv(plan, client=False), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  text=True, env=env)
            segment = _wait_segment(te, timeout=60)
            threading.Thread(target=_drain, args=(te,), daemon=True).start()
            _progress(f"transfer_engine_bench target up: segment {segment} (the client's --segment-id)")
        for name, proc in procs:
            proc.communicate(timeout=plan.serve_seconds)
            _progress(f"{name}: finished (exit {proc.returncode})")
        if te is not None:
            _progress(f"target stays up for {plan.serve_seconds} s or until Ctrl-C")
            try:
                te.wait(timeout=plan.serve_seconds)
            except subprocess.TimeoutExpired:
                pass
        return 0
    except subprocess.TimeoutExpired:
        raise UserError(f"the client did not connect within {plan.serve_seconds} s; start "
                        "`pdrepro baseline --role client --peer <this host>` on the other node, "
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
