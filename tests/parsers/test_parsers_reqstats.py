import pytest

from pdrepro.core.units import GiB, MiB
from pdrepro.parsers.reqstats import merge_scans, parse_line, parse_log

CURRENT = ("[2026-07-15 10:11:12 TP0] ReqTimeStats(rid=9f2c, bootstrap_room=7310000000000000001, input_len=32768, "
           "cached_input_len=0, output_len=1, type=prefill): bootstrap_duration=0.86ms, alloc_wait_duration=0.24ms, "
           "queue_duration=0.41ms, forward_duration=3182.12ms, entry_time=1784110349.990, "
           "transfer_speed=19.13 GB/s, transfer_total=1504.00 MB, #retries=0")
COMPACT = ("[2026-07-15 10:11:12 DP0 TP0 EP0] ReqTimeStats(rid='a1', bootstrap_room=3, input_len=128, cached_input_len=0, "
           "output_len=1, attempts=1, type=prefill): bootstrap_queue_duration(1.10ms) = bootstrap(0.86ms) + "
           "alloc_wait(0.24ms); queue_duration=0.41ms, forward_duration=120.00ms, start=1784110349.990, "
           "transfer_speed=2.77GB/s, transfer_total=5.88MB, #retries=2")
OLD = ("[2025-03-01 08:00:00 TP0] Req Time Stats(rid=x, input len=1024, output len=1, type=prefill): "
       "queue_duration=0.41ms, forward_duration=120.00ms, transfer_speed=10.00 GB/s, transfer_total=47.00 MB")
DECODE = ("[2026-07-15 10:11:15 TP0] ReqTimeStats(rid=9f2c, bootstrap_room=1, input_len=32768, cached_input_len=0, "
          "output_len=128, type=decode): bootstrap_duration=0.91ms, alloc_wait_duration=0.12ms, "
          "transfer_duration=174.29ms, queue_duration=0.20ms, forward_duration=3072.00ms, entry_time=1784112068.548")


def test_current_format_gives_binary_units_and_seconds():
    s = parse_line(CURRENT, 7)
    assert (s.rid, s.kind, s.input_len, s.cached_input_len, s.output_len) == ("9f2c", "prefill", 32768, 0, 1)
    assert s.line_no == 7 and s.retries == 0 and s.timestamp == "2026-07-15 10:11:12"
    assert s.durations_s["forward_duration"] == pytest.approx(3.18212)
    assert s.transfer_bytes_rank0 == 1504 * MiB
    # (1504 MiB / 1024) / 19.13 GiB/s
    assert s.transfer_s == pytest.approx(1504 * MiB / (19.13 * GiB))
    assert s.transfer_s * 1000 == pytest.approx(76.78, abs=0.01)


def test_compact_units_parenthesised_durations_and_attempts():
    s = parse_line(COMPACT)
    assert s.rid == "a1" and s.input_len == 128 and s.retries == 2
    assert s.durations_s["bootstrap_queue_duration"] == pytest.approx(0.0011)
    assert s.transfer_speed_GiB_s == 2.77 and s.transfer_total_MiB == 5.88


def test_old_spelling():
    s = parse_line(OLD)
    assert s.input_len == 1024 and s.output_len == 1 and s.kind == "prefill"
    assert s.transfer_s == pytest.approx(47 / 1024 / 10)


def test_decode_line_has_no_transfer_figures():
    s = parse_line(DECODE)
    assert s.kind == "decode" and s.transfer_s is None
    assert s.durations_s["transfer_duration"] == pytest.approx(0.17429)


def test_zero_speed_gives_no_transfer_time():
    s = parse_line(CURRENT.replace("transfer_speed=19.13", "transfer_speed=0.00"))
    assert s.transfer_s is None


def test_other_lines_are_not_request_stats():
    for line in ["[2026-07-15 10:11:12 TP0] Prefill batch, #new-seq: 1, #new-token: 128, #cached-token: 0",
                 "INFO:     10.0.0.2:40001 - \"POST /generate HTTP/1.1\" 200 OK", ""]:
        assert parse_line(line) is None


def test_log_scan_counts_lines_and_flags_broken_stats_lines(tmp_path):
    log = tmp_path / "prefill.log"
    log.write_text("\n".join(["noise", CURRENT, "[TP0] ReqTimeStats(rid=broken", DECODE, OLD, "more noise"]) + "\n")
    scan = parse_log(log)
    assert scan.lines == 6
    assert [s.input_len for s in scan.stats] == [32768, 32768, 1024]
    assert scan.unreadable == (3,)


def test_health_checks_are_recognised():
    assert parse_line(CURRENT.replace("rid=9f2c", "rid=HEALTH_CHECK_abc")).is_health_check


def _log(tmp_path, *lines):
    path = tmp_path / "prefill.log"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_identical_duplicate_lines_are_dropped_and_counted(tmp_path):
    # A log concatenated with its rotated copy repeats every line verbatim.
    other = CURRENT.replace("rid=9f2c", "rid=77aa")
    log = _log(tmp_path, CURRENT, other, "noise", CURRENT, other)
    # Parsing keeps every line; merging decides what a repeat means.
    assert [s.rid for s in parse_log(log).stats] == ["9f2c", "77aa", "9f2c", "77aa"]
    merged = merge_scans([parse_log(log)])
    assert [s.rid for s in merged.stats] == ["9f2c", "77aa"]
    assert merged.duplicates == (("9f2c", log, 1, log, 4), ("77aa", log, 2, log, 5)) and merged.conflicts == ()


def test_conflicting_duplicates_are_reported_with_both_lines(tmp_path):
    log = _log(tmp_path, CURRENT, CURRENT.replace("transfer_speed=19.13", "transfer_speed=9.13"))
    merged = merge_scans([parse_log(log)])
    assert merged.conflicts == (("9f2c", log, 1, log, 2),) and merged.duplicates == ()
    assert [s.transfer_speed_GiB_s for s in merged.stats] == [19.13]


def test_negative_figures_are_invalid_not_measurements(tmp_path):
    scan = parse_log(_log(tmp_path, CURRENT.replace("transfer_speed=19.13", "transfer_speed=-19.13"), OLD))
    assert [s.rid for s in scan.stats] == ["x"]
    assert scan.invalid == ((1, "transfer_speed=-19.13"),)


def test_the_servers_own_warm_up_is_told_from_routed_requests():
    # Lines as SGLang 0.5.15.post1 logged them on the H200 (tests/recorded/h200-onebox-sglang-0.5.15.post1).
    head = "[2026-12-01 07:25:19] ReqTimeStats(rid=3b67f0d9368448e8bf186a1fbb9ed59c, bootstrap_room={room}, input_len=4, "
    body = ("cached_input_len=0, output_len=1, type=prefill): bootstrap_duration=1.06ms, queue_duration=2.04ms, "
            "forward_duration=59019.18ms, entry_time=1796109860.007, transfer_speed=0.00 GB/s, transfer_total=0.05 MB, "
            "#retries=0")
    warmup = parse_line(head.format(room=0) + body)
    routed = parse_line(head.format(room=3504430887792697661) + body)
    health = parse_line(head.format(room=0).replace("rid=3b67", "rid=HEALTH_CHECK_3b67") + body)
    assert (warmup.bootstrap_room, warmup.is_server_warmup) == (0, True)
    assert (routed.bootstrap_room, routed.is_server_warmup) == (3504430887792697661, False)
    assert health.is_health_check and not health.is_server_warmup
    # A log without bootstrap rooms (a regular server) has no warm-up told this way.
    assert not parse_line((head + body).replace("bootstrap_room={room}, ", "")).is_server_warmup
