"""Files in a run directory that are not what they seem get one line naming them, not a hang: a FIFO, a
device (directly or through a symlink), a line of megabytes; the request-stats parser runs in linear time.
Encodings a user would expect read are read (a byte-order mark, UTF-16 with its mark); a compressed log is
refused with the command that restores it (pdrepro.core.runfile)."""

import gzip
import os
import subprocess
import sys
import time

import pytest
from clihelp import assert_one_line_error, pdrepro
from runbuilder import build_run

from pdrepro.parsers.reqstats import parse_line, parse_log
from pdrepro.scenario.model import load_scenario

SCENARIO = load_scenario("h20-qwen3-235b-1p1d")


def _analyze_process(run_root, timeout=60):
    proc = subprocess.run([sys.executable, "-m", "pdrepro", "analyze", str(run_root)], capture_output=True, text=True,
                          timeout=timeout)
    return proc


def test_a_fifo_in_place_of_a_bench_result_is_named_not_read_forever(tmp_path):
    run = build_run(tmp_path / "run", SCENARIO)
    path = run.bench_file(128)
    path.unlink()
    os.mkfifo(path)
    proc = _analyze_process(run.root)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert str(path) in proc.stderr and "FIFO" in proc.stderr


def test_a_log_that_is_a_symlink_to_dev_zero_is_named(tmp_path):
    run = build_run(tmp_path / "run", SCENARIO)
    run.prefill_log.unlink()
    run.prefill_log.symlink_to("/dev/zero")
    proc = _analyze_process(run.root)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert str(run.prefill_log) in proc.stderr and "device" in proc.stderr


def test_a_line_of_megabytes_in_a_log_is_named(tmp_path):
    run = build_run(tmp_path / "run", SCENARIO)
    with run.prefill_log.open("a") as fh:
        fh.write("x" * (3 << 20) + "\n")
    line = assert_one_line_error(pdrepro("analyze", run.root), "analyze", str(run.prefill_log), "line")
    assert len(line) < 500


def test_a_bench_line_of_megabytes_is_read_and_one_of_garbage_is_named(tmp_path):
    # The bench client's --output-details line grows with the requests (2.9 MB on the H200's rate-4.0
    # comparison): megabytes of a valid record are read; megabytes of something else are one line naming it.
    run = build_run(tmp_path / "run", SCENARIO)
    record = run.bench_file(256).read_text().rstrip("\n")
    run.bench_file(256).write_text(record + " " * (3 << 20) + "\n")
    assert pdrepro("analyze", run.root).rc in (0, 1)
    run.bench_file(256).write_text(record[:-1] + "x" * (3 << 20) + "\n")
    assert_one_line_error(pdrepro("analyze", run.root), "analyze", str(run.bench_file(256)))


@pytest.mark.parametrize("line", [
    "ReqTimeStats(rid=1, input_len=3): " + "a" * 40_000,
    "ReqTimeStats(rid=1, input_len=3): " + "a" * 40_000 + "=1ms",
    "ReqTimeStats(rid=" + "a" + " " * 40_000 + "): x=1ms",
    "ReqTimeStats(" * 4000,
    "ReqTimeStats(rid=1, input_len=3): " + "#" * 40_000,
])
def test_request_stats_lines_parse_in_linear_time(line):
    start = time.monotonic()
    parse_line(line)
    assert time.monotonic() - start < 0.5


def test_the_linear_parser_reads_what_the_old_one_read():
    stat = parse_line("[2026-07-15 10:11:12] ReqTimeStats(rid='ab', input_len=128, output_len=1, type=prefill): "
                      "queue_duration=1.5ms, transfer_speed=23.5 GB/s, transfer_total=47.0 MB, #retries=0, "
                      "wait(2.5ms) x=3s")
    assert (stat.rid, stat.kind, stat.input_len, stat.output_len) == ("ab", "prefill", 128, 1)
    assert stat.durations_s == {"queue_duration": 0.0015, "wait": 0.0025, "x": 3.0}
    assert (stat.transfer_speed_GiB_s, stat.transfer_total_MiB, stat.retries) == (23.5, 47.0, 0)
    spaced = parse_line("Req Time Stats(rid=r, input len=7, type=decode): t=1.0ms")
    assert (spaced.input_len, spaced.kind) == (7, "decode")


def test_a_utf16_log_is_read_as_the_same_log(tmp_path):
    # Chosen: read. A log saved as UTF-16 with its byte-order mark (a Windows editor, PowerShell's >) says
    # what it is; reading it is what the user expects.
    run = build_run(tmp_path / "run", SCENARIO)
    before = parse_log(run.prefill_log)
    run.prefill_log.write_bytes(run.prefill_log.read_text().encode("utf-16"))
    after = parse_log(run.prefill_log)
    assert [s.rid for s in after.stats] == [s.rid for s in before.stats] and after.stats


def test_a_bench_file_with_a_byte_order_mark_is_read(tmp_path):
    run = build_run(tmp_path / "run", SCENARIO)
    fresh = pdrepro("analyze", run.root)
    path = run.bench_file(128)
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    again = pdrepro("analyze", run.root)
    assert again.rc == fresh.rc, again.err
    assert "Traceback" not in again.err


def test_a_gzip_compressed_log_is_refused_with_the_command_that_restores_it(tmp_path):
    # Chosen: refuse. A compressed log under the plain log's name is a copy step gone wrong; decompressing it
    # ourselves would hide that (and open the door to a decompression bomb).
    run = build_run(tmp_path / "run", SCENARIO)
    run.prefill_log.write_bytes(gzip.compress(run.prefill_log.read_bytes()))
    assert_one_line_error(pdrepro("analyze", run.root), "analyze", str(run.prefill_log), "gzip", "gunzip")


def test_a_utf16_log_without_its_mark_is_refused_with_the_conversion(tmp_path):
    run = build_run(tmp_path / "run", SCENARIO)
    run.prefill_log.write_bytes(run.prefill_log.read_text().encode("utf-16-le"))
    assert_one_line_error(pdrepro("analyze", run.root), "analyze", str(run.prefill_log), "UTF-16", "iconv")


def test_a_fifo_as_the_runs_scenario_is_named(tmp_path):
    run = build_run(tmp_path / "run", SCENARIO)
    run.scenario_file.unlink(missing_ok=True)
    os.mkfifo(run.scenario_file)
    proc = _analyze_process(run.root)
    assert proc.returncode == 2 and str(run.scenario_file) in proc.stderr and "FIFO" in proc.stderr, proc.stderr


def test_a_thresholds_file_that_is_a_device_is_named():
    from pdrepro.core.errors import UserError
    from pdrepro.scenario.model import resolve_scenario

    with pytest.raises(UserError, match="/dev/zero.*character device"):
        resolve_scenario("h20-qwen3-235b-1p1d", None, "/dev/zero")
