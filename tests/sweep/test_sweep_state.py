"""What makes a bench result complete, so that a rerun may skip its length."""

import json

from runbuilder import build_run

from pdrepro.scenario.model import load_scenario
from pdrepro.sweep.state import result_problem


def _built(tmp_path, **opts):
    sc = load_scenario("h20-qwen3-235b-1p1d")
    return build_run(tmp_path, sc, **opts).bench_file(1024)


def test_complete_published_result(tmp_path):
    assert result_problem(_built(tmp_path), 50, 1024) is None


def test_incomplete_results(tmp_path):
    assert result_problem(tmp_path / "none.jsonl", 50) == "no result file"
    assert result_problem(_built(tmp_path / "a", errors={1024: 2}), 50) == "completed 48 of 50 requests"
    assert result_problem(_built(tmp_path / "b", truncate_bench={1024}), 50).endswith("is not JSON (cut short?)")
    assert result_problem(_built(tmp_path / "c", empty_bench={1024}), 50) == "empty"
    assert "2 runs appended" in result_problem(_built(tmp_path / "d", appended_runs={1024}), 50)


def test_result_of_another_length_is_not_complete(tmp_path):
    path = _built(tmp_path)
    other = tmp_path / "result-2048.jsonl"
    other.write_text(path.read_text())
    assert result_problem(other, 50, 2048) == "holds a run of prompt length 1024, not 2048"
    assert json.loads(other.read_text())["completed"] == 50


def test_metrics_difference_keeps_gauges_and_subtracts_counters():
    from pdrepro.parsers.prom import parse_metrics_text
    from pdrepro.sweep.metrics import difference

    before = ('# TYPE sglang:kv_transfer_latency_ms histogram\n'
              'sglang:kv_transfer_latency_ms_bucket{engine_type="prefill",le="10.0",tp_rank="0"} 40.0\n'
              'sglang:kv_transfer_latency_ms_sum{engine_type="prefill",tp_rank="0"} 100.0\n'
              'sglang:kv_transfer_latency_ms_count{engine_type="prefill",tp_rank="0"} 40.0\n'
              'sglang:num_running_reqs{engine_type="prefill",tp_rank="0"} 1.0\n')
    running = 'num_running_reqs{engine_type="prefill",tp_rank="0"}'
    after = before.replace(" 40.0", " 60.0").replace(" 100.0", " 300.0").replace(f"{running} 1.0", f"{running} 0.0")
    delta = difference(before, after)
    lat = parse_metrics_text(delta)["latency_ms"]
    assert lat.count == 20 and lat.mean == 10.0
    assert 'num_running_reqs{engine_type="prefill",tp_rank="0"} 0.0' in delta
    assert delta.startswith("# TYPE sglang:kv_transfer_latency_ms histogram\n")


def test_a_result_of_empty_responses_is_not_complete(tmp_path):
    problem = result_problem(_built(tmp_path, output_tokens={1024: 0}), 50, 1024)
    assert problem is not None and "empty" in problem and "50" in problem
    # One token each is a result (too short is the output_tokens gate's to judge, not the sweep's).
    assert result_problem(_built(tmp_path / "one", output_tokens={1024: 1}), 50, 1024) is None
