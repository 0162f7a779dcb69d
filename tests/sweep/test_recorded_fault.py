"""The fault run on a GPU (tests/recorded/h200-fault-mooncake-tcp-sglang-0.5.15.post1, see its SOURCE): `pdrepro
fault` against real SGLang (Mooncake over TCP) on one H200, four faults. Judged here as a user would, on
read-only copies: the real `pdrepro check` gives each run the verdict and exit status it gave on the GPU machine
and writes nothing; each fault-summary.json reads as its model and its counts are its own requests counted again;
the consoles' tables and the README's table are what the summaries hold (built here from them, each number also
counted from the per-request list, not taken from the written counts)."""

from __future__ import annotations

import json
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from runkinds import tree_hash

from pdrepro.report.fault import fault_table
from pdrepro.rundir import faultsummary
from pdrepro.rundir.faultsummary import account

RECORDED = Path(__file__).resolve().parents[1] / "recorded" / "h200-fault-mooncake-tcp-sglang-0.5.15.post1"
# The exit status each run's `pdrepro check` gave on the GPU machine, as its console recorded it; read from the
# console, so the expectation is the recording's, not a number typed here.
FAULTS = ("kill-decode", "kill-router", "kill-prefill", "stop-decode")
CLASS = {"answered": "answered", "http_error": "errored", "client_error": "errored", "no_answer": "lost",
         "not_ended": "lost"}


def _recorded_exit(fault: str) -> int:
    text = (RECORDED / "console" / f"check-fault-{fault}.console.txt").read_text()
    found = re.findall(rf"^check {re.escape(fault)} exit (\d+)$", text, re.M)
    assert len(found) == 1, text
    return int(found[0])


def _table(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("|")]


def _read_only(root: Path) -> None:
    for p in [root, *root.rglob("*")]:
        p.chmod(p.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


def _summary(fault: str) -> faultsummary.FaultSummary:
    return faultsummary.read(RECORDED / "runs" / f"fault-{fault}")


def test_the_recording_holds_the_four_faults_and_nothing_else():
    assert sorted(p.name for p in (RECORDED / "runs").iterdir()) == sorted(f"fault-{f}" for f in FAULTS)
    for fault in FAULTS:
        assert [f.fault for f in _summary(fault).faults] == [fault]


@pytest.mark.parametrize("fault", FAULTS)
def test_check_on_a_read_only_copy_gives_the_recorded_verdict_and_writes_nothing(fault, tmp_path):
    run = tmp_path / fault
    shutil.copytree(RECORDED / "runs" / f"fault-{fault}", run)
    _read_only(run)
    before = tree_hash(run)
    try:
        done = subprocess.run([sys.executable, "-m", "pdrepro", "check", str(run)], capture_output=True, text=True,
                              timeout=120)
    finally:
        assert tree_hash(run) == before
        for p in [run, *run.rglob("*")]:
            p.chmod(p.stat().st_mode | stat.S_IWUSR)
    expected = _recorded_exit(fault)
    assert done.returncode == expected, done.stdout + done.stderr
    # The table of checks is the one the GPU machine printed, line for line (the console's last line is the
    # script's own "check ... exit N").
    recorded = (RECORDED / "console" / f"check-fault-{fault}.console.txt").read_text().splitlines()[:-1]
    # Since the recording, check first names what it judges (the run kind) and prints its tally on standard output;
    # the table and the tally are the machine's, line for line.
    out = done.stdout.splitlines()
    assert out[0].startswith("judging ") and "a fault run" in out[0]
    assert out[1:] + done.stderr.splitlines() == recorded
    assert ("FAIL" in done.stdout) == (expected == 1)


@pytest.mark.parametrize("fault", FAULTS)
def test_the_summary_reads_as_its_model_and_its_counts_are_its_own_requests(fault):
    raw = json.loads((RECORDED / "runs" / f"fault-{fault}" / "fault-summary.json").read_text())
    summary = _summary(fault)
    assert summary.requests_per_fault == len(raw["faults"][0]["requests"]) > 0
    for f in summary.faults:
        # Counted here from the raw list, apart from the code's own account().
        mine = {"answered": 0, "errored": 0, "lost": 0}
        for r in raw["faults"][0]["requests"]:
            mine[CLASS[r["outcome"]]] += 1
        assert f.counts.model_dump() == mine == account(f.requests).model_dump()
        assert sum(mine.values()) == len(f.requests) == summary.requests_per_fault
        assert [r.index for r in f.requests] == list(range(len(f.requests)))


@pytest.mark.parametrize("fault", FAULTS)
def test_the_console_and_report_tables_are_what_the_summary_holds(fault):
    derived = _table(fault_table(_summary(fault)))
    console = (RECORDED / "console" / f"fault-{fault}.console.txt").read_text()
    assert _table(console) == derived
    assert _table((RECORDED / "runs" / f"fault-{fault}" / "fault-report.md").read_text())[:3] == derived
    # The row's numbers, cell by cell, against the raw file (so a change to fault_table cannot hide a wrong count).
    raw = json.loads((RECORDED / "runs" / f"fault-{fault}" / "fault-summary.json").read_text())["faults"][0]
    cells = [c.strip() for c in derived[2].strip("|").split("|")]
    lost = sum(CLASS[r["outcome"]] == "lost" for r in raw["requests"])
    assert cells[:7] == [fault, raw["target"], str(len(raw["requests"])), str(raw["in_flight_at_fault"]),
                         str(sum(r["outcome"] == "answered" for r in raw["requests"])),
                         str(sum(CLASS[r["outcome"]] == "errored" for r in raw["requests"])), str(lost)]
    assert cells[7] == ("—" if raw["recovery_s"] is None else f"{raw['recovery_s']:g}")
    assert cells[9].startswith("FAIL") == (_recorded_exit(fault) == 1)


def test_the_readme_table_and_figures_are_built_from_the_summaries():
    rows = [_table(fault_table(_summary(f))) for f in FAULTS]
    expected = rows[0][:2] + [r[2] for r in rows]
    readme = (RECORDED / "README.md").read_text()
    assert _table(readme) == expected
    shapes = {(s.requests_per_fault, s.concurrency, s.faults[0].client_timeout_s) for s in map(_summary, FAULTS)}
    assert len(shapes) == 1  # the README states one load shape for all four
    ((n, conc, timeout),) = shapes
    flat = re.sub(r"\s+", " ", readme)
    for figure in (f"Each fault ran {n} requests through the router, at most {conc} in flight, with a client "
                   f"timeout of {timeout:g} s", f"before its {timeout:g} s timeout"):
        assert figure in flat, figure


def test_the_refused_stop_and_the_broken_stack_are_what_the_recording_says():
    """The first stop-decode ran on the stack kill-prefill left without its decode: refused (exit 2, no run
    folder written), and the kill-prefill summary says the stack was not whole at its end."""
    refused = (RECORDED / "console" / "fault-stop-decode-refused.console.txt").read_text()
    assert "the stack does not run" in refused and refused.rstrip().endswith("exit 2")
    assert _summary("kill-prefill").stack_up_after is False
    assert all(_summary(f).stack_up_after for f in ("kill-decode", "kill-router", "stop-decode"))
    assert "KVTransferError" in (RECORDED / "stack" / "logs" / "decode.log").read_text()


def _mark_at(log: Path, stamp: str) -> int:
    """The line number of the log's first line at or after ``stamp`` (the fault's load start, from its summary)."""
    for n, line in enumerate(log.read_text().splitlines()):
        if stamp in line:
            return n
    raise AssertionError(f"{stamp} not in {log}")


def test_a_restarted_servers_start_up_lines_are_counted_apart_from_its_error_lines():
    """The kill-decode window of the recorded first stack: the restarted decode logged its whole start-up again
    (skipped imports, no generation config); those are left out of the error lines, which keep what failed."""
    from pdrepro.sweep.faultevidence import STARTUP_NOISE, LogMark, error_lines

    start = _summary("kill-decode").faults[0].started_at  # 2026-12-03T23:49:38+00:00
    stamp = start[:10] + " " + start[11:19]
    logs = RECORDED / "stack" / "logs"
    marks = [LogMark(name, logs / f"{role}.log", _mark_at(logs / f"{role}.log", stamp))
             for name, role in (("prefill-0", "prefill"), ("decode-0", "decode"))]
    kept, more, startup = error_lines(marks)
    assert startup > 0
    assert kept and not any(STARTUP_NOISE.search(k.line) for k in kept)
    # The recorded report (written before this split) showed start-up lines among its error lines.
    recorded = (RECORDED / "runs" / "fault-kill-decode" / "fault-report.md").read_text()
    assert "Ignore import error when loading" in recorded
    assert any("tcp_transport" in k.line for k in kept if k.server == "prefill-0")
    assert any(STARTUP_NOISE.search(line) for line in recorded.splitlines() if line.startswith("decode-0: "))


def test_a_server_that_stopped_answering_is_not_told_to_enable_metrics():
    """kill-prefill's decode answered /metrics before the load and was dead after it; the recorded note (written
    before this fix) blamed --enable-metrics, which the stack had."""
    from pdrepro.parsers.promcounters import ServerCounters
    from pdrepro.sweep.faultevidence import window

    recorded = {m.server: m.note for m in _summary("kill-prefill").faults[0].metrics}
    assert "--enable-metrics" in recorded["decode-0"]
    assert "--enable-metrics" in (RECORDED / "stack" / "stack.json").read_text()
    note = window("decode-0", ServerCounters(generate_responses=9.0), None, restarted=False).note
    assert "stopped answering" in note and "--enable-metrics" not in note
    assert "--enable-metrics" in window("decode-0", None, None, restarted=False).note
