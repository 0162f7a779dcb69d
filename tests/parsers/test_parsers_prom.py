import pytest

from pdrepro.core.errors import UserError
from pdrepro.parsers.prom import parse_metrics_file, parse_metrics_text

TEXT = """# HELP sglang:kv_transfer_latency_ms KV transfer latency.
# TYPE sglang:kv_transfer_latency_ms histogram
sglang:kv_transfer_latency_ms_bucket{engine_type="prefill",le="10.0",tp_rank="0"} 2.0
sglang:kv_transfer_latency_ms_sum{engine_type="prefill",tp_rank="0"} 30.0
sglang:kv_transfer_latency_ms_count{engine_type="prefill",tp_rank="0"} 3.0
sglang:kv_transfer_latency_ms_sum{engine_type="prefill",tp_rank="1"} 10.0
sglang:kv_transfer_latency_ms_count{engine_type="prefill",tp_rank="1"} 1.0
sglang:kv_transfer_total_mb_sum{engine_type="prefill"} 400.0 1784110272000
sglang:kv_transfer_total_mb_count{engine_type="prefill"} 4.0
sglang:num_running_reqs{engine_type="prefill"} 0.0
"""


def test_histograms_sum_over_label_sets():
    hist = parse_metrics_text(TEXT)
    assert set(hist) == {"latency_ms", "total_mb"}
    assert hist["latency_ms"].count == 4 and hist["latency_ms"].mean == pytest.approx(10.0)
    assert hist["total_mb"].mean == pytest.approx(100.0)


def test_garbage_value_names_the_file(tmp_path):
    path = tmp_path / "prefill.prom"
    path.write_text("sglang:kv_transfer_latency_ms_sum{a=\"b\"} abc\n")
    with pytest.raises(UserError, match=str(path)):
        parse_metrics_file(path)


def test_missing_file(tmp_path):
    with pytest.raises(UserError, match="no such metrics file"):
        parse_metrics_file(tmp_path / "nope.prom")


def test_label_values_with_braces_and_escaped_quotes_are_read():
    # A label value may hold '}' and '\"' (the exposition format escapes quotes only).
    text = ('sglang:kv_transfer_latency_ms_sum{model="a}b\\"c",tp_rank="0"} 6.0\n'
            'sglang:kv_transfer_latency_ms_count{model="a}b\\"c",tp_rank="0"} 2\n')
    assert parse_metrics_text(text)["latency_ms"].mean == pytest.approx(3.0)


def test_nan_sample_names_its_line():
    with pytest.raises(UserError, match=r"prefill.prom: line 6 holds NaN"):
        parse_metrics_text(TEXT.replace("} 10.0", "} NaN"), "prefill.prom")


def test_other_metrics_do_not_make_a_scrape_unreadable():
    assert set(parse_metrics_text(TEXT + "some_other_metric{broken 1\n")) == {"latency_ms", "total_mb"}
