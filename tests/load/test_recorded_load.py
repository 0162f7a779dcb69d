"""The load sweep on a GPU (tests/recorded/h200-load-0.5b-*, see its SOURCE): `pdrepro load` at concurrency
1, 2, 4, 8 against a one-box stack on an H200, c1 and c2 measured on one machine, c4 and c8 on a fresh one that
resumed a copy of the folder. Judged here on copies as a user would: the README's table and figures are what
`pdrepro analyze` derives from the raw files, the real `pdrepro check` passes all 16 gates and writes nothing,
the resume is read from the files themselves (states, boot ids, server starts, which server logged which
request), and the stack records left behind signal nothing here."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest
from runkinds import tree_hash

RECORDED = Path(__file__).resolve().parents[1] / "recorded" / "h200-load-0.5b-mooncake-tcp-sglang-0.5.15.post1"
FIRST = RECORDED / "first-session"
STEPS = ("c1", "c2", "c4", "c8")
GATES = ("step_measured", "failed_requests", "server_failed", "transfer_tail")


def _pdrepro(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pdrepro", *args], capture_output=True, text=True, timeout=300)


def _copy(tmp_path: Path) -> Path:
    run = tmp_path / "load"
    shutil.copytree(RECORDED / "load", run)
    return run


def _table(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("| ") or line.startswith("|---")]


# Columns the report gained after the run was recorded: its README and report.md (never edited) lack them.
LATER = ("throughput (req/s)", "output (tokens/s)")


def _without_later(table: list[str]) -> list[str]:
    cells = [row.split("|")[1:-1] for row in table]
    drop = {i for i, h in enumerate(cells[0]) if h.strip() in LATER}
    return ["|" + "|".join(c for i, c in enumerate(row) if i not in drop) + "|" for row in cells]


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", text)


@pytest.fixture(scope="module")
def analyzed(tmp_path_factory):
    run = _copy(tmp_path_factory.mktemp("recorded-load"))
    done = _pdrepro("analyze", str(run))
    assert done.returncode == 0, done.stdout + done.stderr
    return run, json.loads((run / "load-summary.json").read_text())


def test_the_readme_table_is_what_the_analysis_derives(analyzed):
    run, summary = analyzed
    derived = _table((run / "report.md").read_text())
    assert [row.split("|")[1].strip() for row in derived[2:]] == list(STEPS)
    assert _table((RECORDED / "README.md").read_text()) == _without_later(derived)
    # The report the run wrote on the GPU machine says the same as the analysis here.
    assert _table((RECORDED / "load" / "report.md").read_text()) == _without_later(derived)
    steps = {s["name"]: s for s in summary["steps"]}
    assert list(steps) == list(STEPS)
    for name, s in steps.items():
        assert (s["status"], s["completed"], s["failed_requests"], s["retries"]) == ("done", 32, 0, 0), name
        # Every request of the step was found in the prefill's log, each with its transfer time.
        assert s["logged_requests"] == s["transfer_samples"] == summary["num_prompts"] == 32, name
        for role in ("prefill", "decode"):
            assert s["servers"][role]["generate_failed"] == 0, (name, role)
            assert s["servers"][role]["generate_responses"] == 32 + summary["warmup_requests"], (name, role)


def test_the_readme_figures_are_the_recorded_ones(analyzed):
    _, summary = analyzed
    readme = _flat((RECORDED / "README.md").read_text())
    steps = {s["name"]: s for s in summary["steps"]}
    p50 = [steps[n]["transfer_ms_p50"] for n in STEPS]
    medians = f"{p50[0]:.1f} ms at c1, {p50[1]:.1f} at c2, {p50[2]:.1f} at c4 and {p50[3]:.1f} at c8"
    assert medians in readme
    assert f"({p50[3] / p50[0]:.1f}x c1's)" in readme
    assert f"c8's transfer median is {p50[3] / p50[2]:.1f}x c4's" in readme
    ttft = [steps[n] for n in ("c1", "c8")]
    assert (f"p50 {ttft[0]['ttft_ms_p50']:.1f} to {ttft[1]['ttft_ms_p50']:.1f} ms, "
            f"p99 {ttft[0]['ttft_ms_p99']:.1f} to {ttft[1]['ttft_ms_p99']:.1f} ms") in readme
    widest = max(STEPS, key=lambda n: steps[n]["transfer_p99_over_p50"])
    assert f"the widest is {widest}'s {steps[widest]['transfer_p99_over_p50']:.2f}x" in readme
    moved = set(re.findall(r"input_len=4096, .*?transfer_total=([\d.]+) MB",
                           (RECORDED / "load" / "logs" / "prefill.log").read_text()))
    # SGLang's "MB" is MiB: the README states the decimal size, with the log's figure beside it.
    assert len(moved) == 1
    mib = float(moved.pop())
    assert (f"the same {mib * 2**20 / 1e6:.1f} MB of KV (decimal; the prefill logs it as {mib:.0f} MB, meaning MiB)"
            in readme)
    bench = {n: json.loads((RECORDED / "load" / "steps" / n / "bench" / "result-4096.jsonl").read_text())
             for n in STEPS}
    rates = ", ".join(f"{bench[n]['request_throughput']:.1f}" for n in STEPS[:3])
    assert f"{rates} and {bench['c8']['request_throughput']:.1f} requests/s" in readme
    gain = bench["c8"]["request_throughput"] / bench["c4"]["request_throughput"] - 1
    assert f"buys {gain * 100:.0f} % more throughput" in readme
    assert (f"requests took {bench['c4']['duration']:.2f} and {bench['c8']['duration']:.2f} s") in readme
    # Each step's wall time, from the load state (the console rounds the same way).
    state = json.loads((RECORDED / "load" / "load-state.json").read_text())["steps"]
    took = {n: round(state[n]["ended_at"] - state[n]["started_at"]) for n in STEPS}
    assert f"c1 took {took['c1']} s and c2 {took['c2']} s" in readme
    assert f"c4 {took['c4']} s, c8 {took['c8']} s" in readme
    # The second machine's commands, from the job log's step stamps.
    stamps = dict((step, (int(at), clock)) for at, clock, step in re.findall(
        r"^== \[(\d+) s\] (\S+) (.+)$", (RECORDED / "console" / "jobs.out").read_text(), re.M))
    for start, end, words in (("stack up (load)", "load resume", "the stack came up in {} s ({}-{};"),
                              ("load resume", "check load", "the resumed load took {} s ({}-{}:"),
                              ("check load", "stack down", "check {} s"), ("stack down", "engine alone",
                                                                          "stack down {} s")):
        figure = words.format(stamps[end][0] - stamps[start][0], stamps[start][1], stamps[end][1])
        assert _flat(figure) in readme, figure


def test_check_passes_every_gate_of_every_step_and_writes_nothing(tmp_path):
    run = _copy(tmp_path)
    before = tree_hash(run)
    checked = _pdrepro("check", str(run))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert tree_hash(run) == before
    rows = [line.split() for line in checked.stdout.splitlines() if re.match(r"^\w+\s+c\d+\s", line)]
    assert {(r[0], r[1]) for r in rows} == {(g, s) for g in GATES for s in STEPS} and len(rows) == 16
    assert all(r[-1] == "PASS" for r in rows), [r for r in rows if r[-1] != "PASS"]
    assert "16 passed, 0 failed" in checked.stdout + checked.stderr
    # What the GPU machine printed for the same folder is what check prints here, after the line naming what it
    # judges (check gained it since; the recorded console is never edited).
    first, rest = checked.stdout.split("\n", 1)
    assert first == f"judging {run}: a load run, scenario onebox-qwen25-0.5b, transfer backend mooncake"
    assert rest + checked.stderr == (RECORDED / "console" / "check-load.console.txt").read_text()


def test_the_same_command_again_measures_nothing_more(tmp_path):
    # The folder is a finished plan: rerun as recorded (its stack long gone), load skips all four steps and
    # reaches for no server (the addresses given here answer nothing).
    run = _copy(tmp_path)
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text("{}")  # a model's folder, as load checks before any step
    (tmp_path / "data.json").write_text("[]")
    dead = "http://127.0.0.1:9"
    # The scenario as the run recorded it: the shipped one-box scenario has since taken the one-GPU server flags
    # into its launch section, so by name it is another scenario, and load rightly refuses to resume under it.
    argv = ("load", "--scenario", str(run / "scenario.yaml"), "--router", dead, "--prefill", dead, "--decode", dead,
            "--model-path", str(tmp_path / "model"), "--dataset-path", str(tmp_path / "data.json"),
            "--concurrency", "1,2,4,8", "--length", "4096", "--prompts", "32", "--wait-timeout", "5", "--out", str(run))
    # The recorded outputs were written on the GPU machine, by a release that kept no record of what it wrote:
    # this run did not write them, so it does not write over them; it says so before reaching for a server.
    before = tree_hash(run)
    refused = _pdrepro(*argv)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr, refused.stdout + refused.stderr
    assert f"{run / 'load-summary.json'}: not written by pdrepro load" in refused.stderr
    assert tree_hash(run) == before
    aside = tmp_path / "aside"
    aside.mkdir()
    for name in ("load-summary.json", "report.md"):
        (run / name).rename(aside / name)
    (run / "plots" / "load.png").rename(aside / "load.png")
    done = _pdrepro(*argv)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout + done.stderr
    assert "resuming: 4 step(s) already measured (c1, c2, c4, c8), skipped" in out
    assert "load: 0 step(s) run, 4 already measured, 0 failed" in out
    assert not list(run.glob("steps/*/bench/*.partial")) and not list(run.glob("steps/*/bench/*.interrupted"))
    # Written by this run, they are its own now: the same command again writes them again, and a report a person
    # edited since is refused by name, left as the person left it.
    assert (run / "report.md").is_file() and (run / "plots" / "load.png").is_file()
    assert _pdrepro(*argv).returncode == 0
    edited = (run / "report.md").read_text() + "\nmy notes on this load\n"
    (run / "report.md").write_text(edited)
    again = _pdrepro(*argv)
    assert again.returncode == 2 and f"{run / 'report.md'}: not written by pdrepro load" in again.stderr
    assert (run / "report.md").read_text() == edited


def _server_starts(log: Path) -> list[str]:
    return [line for line in log.read_text().splitlines() if re.match(r"^\[[\d: -]+\] server_args=", line)]


def _utc(start_line: str) -> float:
    return datetime.strptime(start_line[1:20], "%Y-%m-%d %H:%M:%S").replace(tzinfo=timezone.utc).timestamp()


def test_c1_and_c2_were_measured_on_the_first_boot_and_kept_c4_and_c8_on_the_second():
    first_state = json.loads((FIRST / "load" / "load-state.json").read_text())["steps"]
    state = json.loads((RECORDED / "load" / "load-state.json").read_text())["steps"]
    # The first machine left c1 and c2 done and c4 unfinished; the resumed folder keeps those two untouched.
    assert {n: s["status"] for n, s in first_state.items()} == {"c1": "done", "c2": "done", "c4": "unfinished"}
    assert {n: state[n] for n in ("c1", "c2")} == {n: first_state[n] for n in ("c1", "c2")}
    assert all(state[n]["status"] == "done" for n in STEPS)
    assert state["c4"]["started_at"] > first_state["c4"]["started_at"] + 3600

    # Two boots: each machine's boot id as it printed it, as its stack recorded it and as the load's provenance
    # recorded it when that machine ran the load.
    boots = []
    for where in (FIRST, RECORDED):
        boot = (where / "boot_id.txt").read_text().strip()
        assert json.loads((where / "stack" / "stack.json").read_text())["boot_id"] == boot
        assert json.loads((where / "load" / "provenance.json").read_text())["host"]["boot_id"] == boot
        boots.append(boot)
    assert re.fullmatch(r"[0-9a-f-]{36}", boots[0]) and boots[0] != boots[1]

    # The load's server logs hold two server starts, each the start its machine's stack logged.
    for role in ("prefill", "decode"):
        starts = _server_starts(RECORDED / "load" / "logs" / f"{role}.log")
        assert len(starts) == 2, role
        assert starts[0] == _server_starts(FIRST / "stack" / "logs" / f"{role}.log")[0], role
        assert starts[1] == _server_starts(RECORDED / "stack" / "logs" / f"{role}.log")[0], role
        assert starts[0] != starts[1], role

    # Every request of c1 and c2 (the warm-up too) entered the first prefill server, every one of c4 and c8 the
    # second; the second started after c2 had ended.
    text = (RECORDED / "load" / "logs" / "prefill.log").read_text()
    second = text.index(_server_starts(RECORDED / "load" / "logs" / "prefill.log")[1])
    assert state["c2"]["ended_at"] < _utc(text[second:]) < state["c4"]["started_at"]
    entered = [[float(t) for t in re.findall(r"input_len=4096, .*?entry_time=([\d.]+)", part)]
               for part in (text[:second], text[second:])]
    for name in STEPS:
        counts = [sum(state[name]["started_at"] <= t <= state[name]["ended_at"] for t in part) for part in entered]
        assert counts == ([33, 0] if name in ("c1", "c2") else [0, 33]), (name, counts)

    # The consoles say the same: the first ran c1, c2 and began c4; the second skipped c1 and c2.
    first_console = (FIRST / "console" / "load.console.txt").read_text()
    assert "[1/4] step c1: done" in first_console and "[2/4] step c2: done" in first_console
    assert "[3/4] step c4:" in first_console and "step c4: done" not in first_console
    console = (RECORDED / "console" / "load.console.txt").read_text()
    assert console.startswith("resuming: 2 step(s) already measured (c1, c2), skipped\n")
    assert "[1/2] step c4: done" in console and "[2/2] step c8: done" in console


@pytest.mark.parametrize("where", [FIRST / "stack", RECORDED / "stack"], ids=["first-boot", "second-boot"])
def test_the_stack_records_of_the_gone_machines_signal_nothing_here(tmp_path, where):
    stack = tmp_path / "stack"
    shutil.copytree(where, stack)
    rec = json.loads((stack / "stack.json").read_text())
    # The first machine was handed back with its stack up; the second took its stack down.
    assert (rec["stopped_at"] is None) == (where == FIRST / "stack")
    down = _pdrepro("stack", "down", str(stack))
    assert down.returncode == 0, down.stdout + down.stderr
    assert "started before this host last booted" in down.stdout + down.stderr
    assert "stopped (SIG" not in down.stdout + down.stderr


def test_the_throughput_per_step_is_the_bench_records_own(analyzed):
    # Requests/s and output tokens/s per step, as the raw bench records give them: their completed and
    # total_output_tokens over their duration, which is also what the client itself reported.
    run, summary = analyzed
    report = _table((run / "report.md").read_text())
    headers = [h.strip() for h in report[0].split("|")[1:-1]]
    for step, row in zip(summary["steps"], report[2:]):
        raw = json.loads((RECORDED / "load" / "steps" / step["name"] / "bench" / "result-4096.jsonl").read_text())
        assert step["requests_per_s"] == pytest.approx(raw["completed"] / raw["duration"], rel=1e-12)
        assert step["output_tokens_per_s"] == pytest.approx(raw["total_output_tokens"] / raw["duration"], rel=1e-12)
        assert step["requests_per_s"] == pytest.approx(raw["request_throughput"], rel=1e-9)
        assert step["output_tokens_per_s"] == pytest.approx(raw["output_throughput"], rel=1e-9)
        cells = [c.strip() for c in row.split("|")[1:-1]]
        assert cells[headers.index("throughput (req/s)")] == f"{step['requests_per_s']:.2f}"
        assert cells[headers.index("output (tokens/s)")] == f"{step['output_tokens_per_s']:.1f}"
    # More load, more throughput, on this run: c1 to c8 rise.
    rates = [s["requests_per_s"] for s in summary["steps"]]
    assert rates == sorted(rates) and rates[0] > 0
