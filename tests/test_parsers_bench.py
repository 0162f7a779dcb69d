import json

import pytest

from pdrepro.errors import UserError
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


def test_appended_runs_use_the_last_complete_one(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(_obj(completed=1)) + "\n" + json.dumps(_obj(completed=3)) + "\n" + '{"completed": 7, "ttf')
    result, notes = parse_bench_file(path)
    assert result.completed == 3
    assert any("cut off" in n for n in notes)
    assert any("2 bench runs" in n and "last" in n for n in notes)


def test_upstream_infinity_rate_is_accepted(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text('{"request_rate": Infinity, "completed": 2, "mean_ttft_ms": 1.0}\n')
    result, _ = parse_bench_file(path)
    assert result.raw["request_rate"] == float("inf")


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
