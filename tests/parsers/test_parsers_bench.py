import json

import pytest

from pdrepro.core.errors import UserError
from pdrepro.parsers.bench import parse_bench_file, percentile


def _obj(**kw):
    base = {"completed": 3, "duration": 1.5, "mean_ttft_ms": 999.0, "median_ttft_ms": 999.0, "p99_ttft_ms": 999.0,
            "input_lens": [128, 128, 128, 128], "ttfts": [0.1, 0.2, 0.0, 0.3], "errors": ["", "", "boom", ""]}
    base.update(kw)
    return base


def test_per_request_ttfts_are_seconds_and_errors_are_left_out(tmp_path):
    path = tmp_path / "result-128.jsonl"
    path.write_text(json.dumps(_obj()) + "\n")
    result, notes = parse_bench_file(path)
    assert notes == []
    assert result.completed == 3
    assert result.errors == ("boom",)
    mean, median, p99 = result.ttft_stats_ms()
    assert mean == pytest.approx(200.0)
    assert median == pytest.approx(200.0)
    assert p99 == pytest.approx(298.0)


def test_summary_keys_are_used_without_output_details(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps({"completed": 5, "mean_ttft_ms": 12.5, "median_ttft_ms": 12.0, "p99_ttft_ms": 20.0}) + "\n")
    result, _ = parse_bench_file(path)
    assert not result.has_details
    assert result.ttft_stats_ms() == (12.5, 12.0, 20.0)


def test_appended_runs_use_the_last_one(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(_obj(completed=1)) + "\n" + "garbage\n" + json.dumps(_obj(completed=3)) + "\n")
    result, notes = parse_bench_file(path)
    assert result.completed == 3
    assert any("line 2 is not JSON" in n for n in notes)
    assert any("2 bench runs" in n and "last" in n for n in notes)


def test_upstream_infinity_rate_is_accepted(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text('{"request_rate": Infinity, "completed": 2, "mean_ttft_ms": 1.0}\n')
    result, _ = parse_bench_file(path)
    assert (result.completed, result.mean_ttft_ms) == (2, 1.0)


@pytest.mark.parametrize("content, message", [
    (None, "no such bench result"),
    ("", "empty"),
    ("\n\n", "empty"),
    ('{"completed": 3, "mean_tt', "cut off"),
    ("[1, 2]\n", "no complete bench result"),
    ('{"duration": 3}\n', "no 'completed' key"),
])
def test_bad_bench_files_name_the_file(tmp_path, content, message):
    path = tmp_path / "result-256.jsonl"
    if content is not None:
        path.write_text(content)
    with pytest.raises(UserError, match=message) as info:
        parse_bench_file(path)
    assert str(path) in str(info.value)
    assert "\n" not in str(info.value)


def test_percentile_interpolates_like_numpy():
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5
    assert percentile([5.0], 99) == 5.0
    assert percentile(list(map(float, range(101))), 99) == pytest.approx(99.0)


# What the published loop's client writes for one length (sglang.benchmark.serving --output-file, --output-details).
def _run(L=1024, n=4, out=128, completed=None, **kw):
    obj = {"backend": "sglang", "dataset_name": "random", "random_input_len": L, "random_output_len": out,
           "completed": n if completed is None else completed, "mean_ttft_ms": float(L),
           "input_lens": [L] * n, "output_lens": [out] * n, "ttfts": [L / 1000.0] * n, "errors": [""] * n}
    obj.update(kw)
    return json.dumps(obj)


def _write(tmp_path, *lines, name="result-1024.jsonl"):
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_file_holding_another_lengths_run_is_rejected(tmp_path):
    path = _write(tmp_path, _run(L=2048))
    with pytest.raises(UserError, match="no run of prompt length 1024") as info:
        parse_bench_file(path, prompt_len=1024, num_prompts=4, output_len=128)
    assert str(path) in str(info.value) and "2048" in str(info.value)


def test_appended_runs_pick_the_one_matching_the_length_and_say_which(tmp_path):
    path = _write(tmp_path, _run(L=1024, n=2), _run(L=1024, n=4), _run(L=2048, n=4), _run(L=1024, n=4, out=64))
    result, notes = parse_bench_file(path, prompt_len=1024, num_prompts=4, output_len=128)
    assert result.completed == 4 and result.mean_ttft_ms == 1024.0
    assert any("4 bench runs" in n and "run 2" in n and "line 2" in n for n in notes), notes


@pytest.mark.parametrize("other", [dict(dataset_name="sharegpt"), dict(L=512), dict(out=256), dict(n=5)])
def test_no_matching_run_names_the_file_and_what_it_holds(tmp_path, other):
    path = _write(tmp_path, _run(**other))
    with pytest.raises(UserError) as info:
        parse_bench_file(path, prompt_len=1024, num_prompts=4, output_len=128)
    message = str(info.value)
    assert str(path) in message and "\n" not in message and "1024" in message


def test_completed_above_the_prompts_requested_is_an_error(tmp_path):
    path = _write(tmp_path, json.dumps({"dataset_name": "random", "random_input_len": 1024, "random_output_len": 128,
                                        "completed": 60, "mean_ttft_ms": 10.0}))
    with pytest.raises(UserError, match="completed 60 .*50"):
        parse_bench_file(path, prompt_len=1024, num_prompts=50, output_len=128)


def test_mean_ttft_is_computed_from_per_request_ttfts_when_the_key_is_absent(tmp_path):
    obj = json.loads(_run())
    del obj["mean_ttft_ms"]
    obj["ttfts"] = [0.5, 1.0, 1.5, 2.0]   # seconds
    result, _ = parse_bench_file(_write(tmp_path, json.dumps(obj)), prompt_len=1024, num_prompts=4, output_len=128)
    assert result.mean_ttft_ms == pytest.approx(1250.0)
    assert result.ttft_stats_ms()[0] == pytest.approx(1250.0)


def test_a_cut_off_last_run_after_an_older_complete_one_is_an_error(tmp_path):
    path = _write(tmp_path, _run(), _run()[:40])
    with pytest.raises(UserError, match="cut off") as info:
        parse_bench_file(path, prompt_len=1024, num_prompts=4, output_len=128)
    assert str(path) in str(info.value)


@pytest.mark.parametrize("change, needle", [
    ({"completed": None}, "'completed'"),
    ({"completed": "fifty"}, "'completed'"),
    ({"completed": 3.5}, "'completed'"),
    ({"ttfts": "0.1,0.2"}, "'ttfts'"),
    ({"ttfts": [0.1, float("nan"), 0.2, 0.3]}, "NaN"),
    ({"ttfts": [0.1, None, 0.2, 0.3]}, "'ttfts'"),
    ({"errors": "boom"}, "'errors'"),
    ({"mean_ttft_ms": float("nan")}, "NaN"),
])
def test_malformed_fields_are_bad_input(tmp_path, change, needle):
    obj = json.loads(_run())
    obj.update(change)
    path = _write(tmp_path, json.dumps(obj))
    with pytest.raises(UserError) as info:
        parse_bench_file(path, prompt_len=1024, num_prompts=4, output_len=128)
    assert needle in str(info.value) and str(path) in str(info.value) and "\n" not in str(info.value)


def test_a_directory_or_a_symlink_loop_is_bad_input(tmp_path):
    folder = tmp_path / "result-1024.jsonl"
    folder.mkdir()
    with pytest.raises(UserError, match="is a directory"):
        parse_bench_file(folder)
    loop = tmp_path / "result-2048.jsonl"
    loop.symlink_to(loop)
    with pytest.raises(UserError, match="symlink") as info:
        parse_bench_file(loop)
    assert str(loop) in str(info.value)


def test_output_lens_are_read_per_successful_request(tmp_path):
    path = _write(tmp_path, _run(n=3, output_lens=[128, 0, 97], errors=["", "Server disconnected", ""],
                                 total_output_tokens=225, total_output_tokens_retokenized=224.0))
    result, _ = parse_bench_file(path, prompt_len=1024, num_prompts=3, output_len=128)
    assert result.ok_output_lens == (128, 97)
    assert (result.total_output_tokens, result.total_output_tokens_retokenized) == (225, 224)


@pytest.mark.parametrize("lens, shown", [
    ([128, "128", 128], "entry 1 is '128'"),
    ([128, None, 128], "entry 1 is None"),
    ([128, 128, -1], "entry 2 is -1"),
    ([128, 12.5, 128], "entry 1 is 12.5"),
    ({"0": 128}, "'output_lens' is dict"),
])
def test_a_damaged_output_lens_is_bad_input_naming_file_and_field(tmp_path, lens, shown):
    path = _write(tmp_path, _run(n=3, output_lens=lens))
    with pytest.raises(UserError, match="output_lens") as info:
        parse_bench_file(path, prompt_len=1024, num_prompts=3, output_len=128)
    message = str(info.value)
    assert message.startswith(f"{path}: ") and shown in message and "\n" not in message
    assert "rerun the bench for this length" in message


def test_a_token_total_that_is_no_number_is_bad_input(tmp_path):
    path = _write(tmp_path, _run(total_output_tokens="n/a"))
    with pytest.raises(UserError, match="'total_output_tokens' is 'n/a', not a count of tokens") as info:
        parse_bench_file(path, prompt_len=1024, num_prompts=4, output_len=128)
    assert str(path) in str(info.value)
