import json
from pathlib import Path

from pdrepro.scenario.model import load_scenario
from pdrepro.sweep.benchcmd import BenchTarget, bench_argv

GOLDEN = Path(__file__).parent.parent / "golden_sweep" / "bench-argv-h20-qwen3-235b-1p1d.json"


def _argv(length: int) -> list[str]:
    sc = load_scenario("h20-qwen3-235b-1p1d")
    target = BenchTarget("http://10.0.0.2:8000/", "/models/Qwen3-235B-A22B-Instruct-2507", sc.model.name,
                         "/data/ShareGPT_V3_unfiltered_cleaned_split.json")
    return bench_argv(sc, length, target, Path(f"/runs/r1/bench/result-{length}.jsonl"))


def test_published_loop_matches_golden_argv():
    assert _argv(32768) == json.loads(GOLDEN.read_text())


def test_published_flags_and_values():
    argv = _argv(4096)
    flags = dict(zip(argv[3::1], argv[4::1]))
    assert argv[:3] == ["python", "-m", "sglang.benchmark.serving"]
    assert flags["--random-input-len"] == "4096"
    assert flags["--num-prompts"] == "50" and flags["--random-output-len"] == "128"
    assert flags["--request-rate"] == "inf" and flags["--max-concurrency"] == "1"
    assert flags["--seed"] == "42" and flags["--warmup-requests"] == "1"
    assert flags["--base-url"] == "http://10.0.0.2:8000"
    for switch in ("--flush-cache", "--tokenize-prompt", "--output-details"):
        assert argv.count(switch) == 1


def test_comparison_rate_and_no_concurrency_cap():
    sc = load_scenario("a10-qwen25-7b-rate4")
    argv = bench_argv(sc, 2048, BenchTarget("http://h:1", "/m", "qwen", "/d.json"), Path("/o.jsonl"))
    assert argv[argv.index("--request-rate") + 1] == "4.0"
    assert "--max-concurrency" not in argv
    assert argv[argv.index("--num-prompts") + 1] == "200"
