"""The one-box comparison scenarios (the A10 comparison's workload on one GPU box) and what their report adds:
the 1P1D/regular ratios beside the published ones, where each configuration ran, and the paragraph on a shared
GPU, shown only where the stack records put a configuration's servers on one GPU."""

import json

import pytest
from test_comparison import _run_as_published

from pdrepro.kinds.registry import analyze_run
from pdrepro.scenario.model import load_scenario

ONEBOX = {"a10-qwen25-7b-onebox-rate1": "a10-qwen25-7b-rate1", "a10-qwen25-7b-onebox-rate4": "a10-qwen25-7b-rate4"}


@pytest.mark.parametrize("name", sorted(ONEBOX))
def test_the_one_box_scenarios_keep_the_published_workload_at_tp_1(name):
    sc, published = load_scenario(name), load_scenario(ONEBOX[name])
    assert sc.kind == "comparison" and sc.parallel.prefill_tp == sc.parallel.decode_tp == 1
    assert (sc.sweep.prompt_lens, sc.sweep.output_len, sc.sweep.num_prompts, sc.sweep.request_rate,
            sc.sweep.max_concurrency) == (published.sweep.prompt_lens, published.sweep.output_len,
                                          published.sweep.num_prompts, published.sweep.request_rate, None)
    assert sc.reference.configurations == published.reference.configurations
    assert set(sc.launch.stacks) == {"disaggregated", "regular"} and sc.launch.shared_gpu_mem_fraction
    g = sc.geometry
    # Qwen2.5-7B's config.json, which offline-model builds its random weights from.
    assert (g.num_hidden_layers, g.num_attention_heads, g.num_key_value_heads, g.head_dim, g.hidden_size,
            g.intermediate_size, g.vocab_size) == (28, 28, 4, 128, 3584, 18944, 152064)
    assert sc.model.dtype == "bfloat16" and sc.kv_bytes_per_token == 28 * 2 * 4 * 128 * 2


def _stack(folder, servers: dict[str, str]):
    procs = [{"name": n, "role": "x", "env": {"CUDA_VISIBLE_DEVICES": g}} for n, g in servers.items()]
    procs.append({"name": "router", "role": "router", "env": {}})
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "stack.json").write_text(json.dumps({"processes": procs}))


def test_ratios_sit_beside_the_published_ones(tmp_path):
    sc = load_scenario("a10-qwen25-7b-onebox-rate4")
    analyze_run(_run_as_published(tmp_path, sc), sc)
    report = (tmp_path / "report.md").read_text()
    row = next(line for line in report.splitlines() if line.startswith("| P99 ITL (ms)"))
    # Published P99 ITL: 19.72 against 294.89 ms, a ratio of 0.07 both measured (run as published) and published.
    assert row.count("| 0.07 ") == 2
    row = next(line for line in report.splitlines() if line.startswith("| Mean TTFT (ms)"))
    assert row.count(f"| {1111.94 / 310.01:.2f} ") == 2
    assert "## Where each configuration ran" in report and "On one shared GPU" not in report


def test_the_shared_gpu_paragraph_follows_the_stack_records(tmp_path):
    sc = load_scenario("a10-qwen25-7b-onebox-rate1")
    run = _run_as_published(tmp_path / "shared", sc)
    _stack(run.root / "1P1D", {"prefill-0": "0", "decode-0": "0"})
    _stack(run.root / "2-regular", {"regular-0": "0", "regular-1": "0"})
    analyze_run(run, sc)
    report = (run.root / "report.md").read_text()
    assert "## On one shared GPU" in report and "regular-1 0" in report

    apart = _run_as_published(tmp_path / "apart", sc)
    _stack(apart.root / "1P1D", {"prefill-0": "0", "decode-0": "1"})
    _stack(apart.root / "2-regular", {"regular-0": "0", "regular-1": "1"})
    analyze_run(apart, sc)
    report = (apart.root / "report.md").read_text()
    assert "On one shared GPU" not in report and "decode-0 1" in report


def test_a_mangled_stack_record_is_read_as_none(tmp_path):
    sc = load_scenario("a10-qwen25-7b-onebox-rate1")
    run = _run_as_published(tmp_path, sc)
    (run.root / "1P1D" / "stack.json").write_text('{"processes": [1, {"env": []}, {"name": 3}]')
    (run.root / "2-regular" / "stack.json").write_text("[" * 5000)
    summary = analyze_run(run, sc)
    assert all("gpus" not in (c["measured"] or {}) for c in summary["configurations"].values())
