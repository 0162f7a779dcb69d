"""ib_write_bw on each NIC pair alone, one after the other, then on every pair at once (the client side),
each run's output kept under RUN/baseline/ and its figure, or why none, in the record."""

from __future__ import annotations

import subprocess
from collections.abc import Callable

from ..core.text import printable
from ..parsers import perftest
from ..rundir.baseline import PerftestRecord, PortPair, PortRun
from ..rundir.portbaseline import PHASE_WORDS
from .baselineplan import BaselinePlan, perftest_argv, progress, save_output, tcp_port


def _start(plan: BaselinePlan, phase: str, i: int, nic: str) -> tuple[list[str], subprocess.Popen]:
    argv = perftest_argv(plan, tcp_port(plan, phase, i), nic, client=True)
    return argv, subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _one_line(text: str, limit: int = 240) -> str:
    """The tool's last lines as one printable line (a tool's output may hold anything)."""
    tail = " / ".join(line.strip() for line in text.strip().splitlines()[-2:] if line.strip()) or "no output"
    tail = printable(tail)
    return tail if len(tail) <= limit else tail[:limit] + "..."


def _finish(plan: BaselinePlan, phase: str, nic: str, remote: str, argv: list[str], proc: subprocess.Popen) -> PortRun:
    """Waits for one ib_write_bw client, keeps its output, and reads its figure (or why there is none)."""
    error = None
    try:
        text, _ = proc.communicate(timeout=plan.duration + 120)
    except subprocess.TimeoutExpired:
        proc.kill()
        text = proc.communicate()[0]
        error = f"no result within {plan.duration + 120} s"
    name = f"ib_write_bw-{phase}-{nic}.txt"
    save_output(plan.out, name, text)
    run = PortRun(bw_average_GB_s=None, qps=plan.qps, command=argv, output=name)
    try:
        bw = perftest.parse_bw(text)
    except ValueError:
        run.error = error or f"exit {proc.returncode}: {_one_line(text)}"
        progress(f"  {nic} {PHASE_WORDS[phase]}: no figure ({run.error})")
        return run
    if error is not None:
        run.error = error
        return run
    progress(f"  {nic} -> {plan.peer}:{remote} {PHASE_WORDS[phase]}: {bw.average_Gb_s:.1f} Gb/s = "
              f"{bw.average_GB_s:.2f} GB/s (average)")
    run.bw_average_GB_s, run.bw_peak_GB_s = round(bw.average_GB_s, 3), round(bw.peak_GB_s, 3)
    run.bw_average_Gb_s, run.printed_unit, run.msg_bytes = round(bw.average_Gb_s, 2), bw.unit_printed, bw.msg_bytes
    return run


def run_perftest_client(plan: BaselinePlan, save: Callable[[PerftestRecord], None]) -> PerftestRecord:
    """ib_write_bw on each NIC pair alone, one after the other, then on all pairs at once; SAVE is called
    after each run, so an interrupted baseline keeps what it measured."""
    pairs = list(zip(plan.nics, plan.remote_nics))
    record = PerftestRecord(unit="decimal GB/s (perftest Gb/sec / 8; its MB/sec would be MiB/s)", aggregate_GB_s=None,
                            ports=[PortPair(local=nic, remote=remote, line_rate_GB_s=plan.port_rates.get(nic))
                                   for nic, remote in pairs])
    progress(f"ib_write_bw: {len(pairs)} NIC pair(s), each alone, then all at once; {plan.msg_bytes} B messages, "
              f"{plan.qps} QPs, {plan.duration} s each ...")
    for i, (nic, remote) in enumerate(pairs):
        record.ports[i].alone = _finish(plan, "alone", nic, remote, *_start(plan, "alone", i, nic))
        save(record)
    started = [_start(plan, "together", i, nic) for i, (nic, _) in enumerate(pairs)]
    for i, (nic, remote) in enumerate(pairs):
        record.ports[i].together = _finish(plan, "together", nic, remote, *started[i])
        save(record)
    figures = [p.together.bw_average_GB_s if p.together else None for p in record.ports]
    # A sum missing a port is no aggregate of the ports: none, rather than a ceiling too low.
    if figures and all(f is not None for f in figures):
        record.aggregate_GB_s = round(sum(f for f in figures if f is not None), 3)
        progress(f"  aggregate, all at once: {record.aggregate_GB_s:.2f} GB/s")
    save(record)
    return record
