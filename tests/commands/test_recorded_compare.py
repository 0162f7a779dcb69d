"""The first comparison measured on a GPU (tests/recorded/h200-compare-7b-*, see its SOURCE): `pdrepro compare`
ran 1P1D and two regular instances of the 7B-geometry one-box scenarios on one H200, at rate 1.0 then 4.0 on
each stack. Held here: the README's tables are the bench files; the rate-1.0 run, judged on a copy the way
`compare` judges a finished one, passes every check and gives the ratios the README states, with the shared-GPU
caveat in its report; the rate-4.0 bench files the sweep refused on the machine (a 2.9 MB line past the old
line cap) are complete results that the sweep's own test now accepts; and the run's state says a rerun of the
same command resumes at rate 4.0 with rate 1.0 kept."""

from __future__ import annotations

import contextlib
import io
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from runkinds import tree_hash

from pdrepro.commands import compare
from pdrepro.core import runfile
from pdrepro.parsers.bench import parse_bench_file
from pdrepro.scenario.model import load_scenario
from pdrepro.sweep.state import result_problem

RECORDED = Path(__file__).resolve().parents[1] / "recorded" / "h200-compare-7b-sglang-0.5.15.post1"
CMP = RECORDED / "cmp"
CONFIGS = ("1P1D", "2-regular")
# scenario -> (prompt length, prompts, the bench file as the sweep left it)
RATES = {"a10-qwen25-7b-onebox-rate1": (8192, 50, "result-8192.jsonl"),
         "a10-qwen25-7b-onebox-rate4": (2048, 200, ".result-2048.jsonl.partial")}
COLUMNS = ("completed", "output_throughput", "mean_e2e_latency_ms", "mean_ttft_ms", "p99_ttft_ms", "mean_itl_ms",
           "p99_itl_ms")


def _bench(scenario: str, config: str) -> Path:
    return CMP / scenario / config / "bench" / RATES[scenario][2]


def _tables() -> list[dict[str, list[str]]]:
    """The README's two tables (rate 1.0, then 4.0), configuration -> its cells."""
    tables, current = [], None
    for line in (RECORDED / "README.md").read_text().splitlines():
        row = re.match(r"^\| (1P1D|2-regular) \| (.*) \|$", line)
        if row:
            if current is None:
                current = {}
                tables.append(current)
            current[row.group(1)] = [c.strip() for c in row.group(2).split("|")]
        elif not line.startswith("|"):
            current = None
    return tables


@pytest.mark.parametrize("index, scenario", list(enumerate(RATES)))
def test_the_readme_tables_are_the_bench_files(index, scenario):
    table = _tables()[index]
    length, prompts, _ = RATES[scenario]
    assert sorted(table) == sorted(CONFIGS)
    for config in CONFIGS:
        result, _notes = parse_bench_file(_bench(scenario, config), prompt_len=length, num_prompts=prompts,
                                          output_len=512)
        assert result.completed == prompts
        want = [str(result.completed)] + [f"{result.reported[k]:.2f}" for k in COLUMNS[1:]]
        assert table[config] == want, (scenario, config)


def test_the_refused_rate_4_files_are_whole_results_the_sweep_now_accepts():
    for config in CONFIGS:
        path = _bench("a10-qwen25-7b-onebox-rate4", config)
        line = path.read_text().splitlines()[0]
        assert len(line) > runfile.MAX_LINE  # what the old cap refused
        assert result_problem(path, 200, 2048) is None
    console = (RECORDED / "console" / "compare.console.txt").read_text()
    assert console.count("line 1 is longer than 1 MiB") == 2


def test_the_state_says_a_rerun_resumes_at_rate_4():
    state = json.loads((CMP / "arms-state.json").read_text())
    assert [(a["name"], a["status"], a["exit"]) for a in state["arms"]] == [("1P1D", "failed", 2),
                                                                            ("2-regular", "failed", 2)]
    for config in CONFIGS:
        done = json.loads((CMP / "a10-qwen25-7b-onebox-rate1" / config / "sweep-state.json").read_text())
        assert {k: v["status"] for k, v in done["lengths"].items()} == {"8192": "done"}
        rate4 = CMP / "a10-qwen25-7b-onebox-rate4" / config / "sweep-state.json"
        assert not rate4.is_file() or not any(
            v["status"] == "done" for v in json.loads(rate4.read_text())["lengths"].values())
        # Each stack went down: the record says when, and names GPU 0 for all three processes.
        stack = json.loads((CMP / config / "stack.json").read_text())
        assert stack["stopped_at"] and {p["env"].get("CUDA_VISIBLE_DEVICES") for p in stack["processes"]
                                    if p["role"] != "router"} == {"0"}


@pytest.fixture(scope="module")
def judged(tmp_path_factory):
    """On a copy, what `compare` now does when an arm failed: each scenario whose configurations all finished is
    judged (stack records beside its results, analyze, check), the others say what they lack; then the
    user's own `pdrepro check` of the judged rate."""
    out = tmp_path_factory.mktemp("recorded-compare") / "cmp"
    shutil.copytree(CMP, out)
    said = io.StringIO()
    with contextlib.redirect_stdout(said), contextlib.redirect_stderr(said):
        compare._judge_complete(out, [load_scenario(name) for name in RATES], list(CONFIGS))
    run = out / "a10-qwen25-7b-onebox-rate1"
    before = tree_hash(run)
    checked = subprocess.run([sys.executable, "-m", "pdrepro", "check", str(run)], capture_output=True, text=True,
                             timeout=300)
    return run, said.getvalue(), checked, before


def test_rate_1_is_judged_though_rate_4_failed_and_passes_every_check(judged):
    run, said, checked, before = judged
    assert (run / "summary.json").is_file() and (run / "report.md").is_file()
    rate4 = run.parent / "a10-qwen25-7b-onebox-rate4"
    assert not (rate4 / "summary.json").exists() and not (rate4 / "report.md").exists()
    assert "a10-qwen25-7b-onebox-rate4: not judged (1P1D at 2048 tokens: no result file)" in said
    assert checked.returncode == 0, checked.stdout[-2000:] + checked.stderr[-2000:]
    assert re.search(r"^(\d+) passed, 0 failed$", checked.stderr, re.M)
    assert tree_hash(run) == before


def test_rate_1_ratios_are_the_readmes_and_the_report_says_the_gpu_was_shared(judged):
    run = judged[0]
    summary = json.loads((run / "summary.json").read_text())
    measured = {name: summary["configurations"][name]["measured"] for name in CONFIGS}
    ratio = {m: measured["1P1D"][m] / measured["2-regular"][m] for m in ("output_tok_s", "mean_itl_ms", "mean_ttft_ms")}
    readme = (RECORDED / "README.md").read_text()
    stated = re.search(r"output throughput ([\d.]+) \(published on the A10: [\d.]+\), mean ITL ([\d.]+) \([\d.]+\), "
                       r"mean TTFT ([\d.]+)", readme.replace("\n  ", " "))
    assert stated is not None
    assert [float(x) for x in stated.groups()] == [round(ratio[m], 2) for m in ("output_tok_s", "mean_itl_ms",
                                                                                 "mean_ttft_ms")]
    # On this shared GPU, 1P1D kept the regular pair's throughput and cut its ITL, at a higher TTFT.
    assert ratio["output_tok_s"] > 0.95 and ratio["mean_itl_ms"] < 1 and ratio["mean_ttft_ms"] > 1
    report = (run / "report.md").read_text()
    assert "On one shared GPU" in report and "decode is never alone on its GPU" in report
