"""The one reader's size caps and errors (pdrepro.core.runfile): a file past its kind's cap is refused by
its size before a byte is read; a log is streamed, so its size is no memory; an OS error opening a file is
one line that callers handling OSError still catch."""

from __future__ import annotations

import pytest

from pdrepro.core import runfile
from pdrepro.core.errors import UserError


def _sparse(path, size):
    with open(path, "wb") as fh:
        fh.truncate(size)


def test_a_record_one_byte_past_its_cap_is_refused_and_one_at_it_is_read(tmp_path):
    at, past = tmp_path / "at.json", tmp_path / "past.json"
    body = b'{"a": 1}'
    pad = runfile.RECORD.cap - len(body)
    line = b" " * 1023 + b"\n"  # whitespace JSON allows, in lines of a kilobyte
    at.write_bytes(body + line * (pad // len(line)) + b" " * (pad % len(line)))
    past.write_bytes(at.read_bytes() + b" ")
    assert runfile.read_json(at) == {"a": 1}
    with pytest.raises(runfile.TooLarge, match="larger than any JSON record"):
        runfile.read_json(past)


def test_a_log_is_streamed_whatever_its_size_and_a_whole_read_of_it_is_capped(tmp_path):
    log = tmp_path / "prefill.log"
    with open(log, "wb") as fh:
        fh.write(b"first line\n")
        fh.truncate(runfile.TEXT.cap + 1)  # past what any whole read holds in memory
    lines = runfile.lines(log)
    assert next(lines) == "first line\n"
    lines.close()
    with pytest.raises(runfile.TooLarge, match="text file"):
        runfile.read_text(log)
    with pytest.raises(runfile.TooLarge, match="server log"):
        _sparse(tmp_path / "huge.log", runfile.LOG.cap + 1)
        next(runfile.lines(tmp_path / "huge.log"))


def test_an_os_error_opening_a_file_is_one_line_and_still_an_oserror(tmp_path):
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    with pytest.raises(runfile.Unreadable) as info:
        runfile.read_json(loop)
    assert isinstance(info.value, OSError) and isinstance(info.value, UserError)
    assert str(loop) in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(FileNotFoundError):  # absence stays the callers' to judge
        runfile.read_json(tmp_path / "absent.json")


def test_bytes_are_capped_too(tmp_path):
    _sparse(tmp_path / "blob", runfile.METRICS.cap + 1)
    with pytest.raises(runfile.TooLarge, match="/metrics scrape"):
        runfile.read_bytes(tmp_path / "blob", runfile.METRICS)


def test_a_bench_line_is_as_long_as_its_requests_make_it_and_a_log_line_is_not(tmp_path):
    # The bench client's --output-details line carries every request's inter-token latencies: on the H200,
    # 200 requests of 512 tokens wrote one line of 2.9 MB (tests/recorded/h200-compare-*). Built here to
    # that size (a fixture); the same line in a server log is still no line a server writes.
    record = '{"completed": 200, "itls": [' + ", ".join(["0.0125"] * 300_000) + "]}\n"
    assert len(record) > 2 * runfile.MAX_LINE
    bench, log = tmp_path / "result-2048.jsonl", tmp_path / "prefill.log"
    bench.write_text(record)
    log.write_text(record)
    assert runfile.read_text(bench, kind=runfile.BENCH) == record
    with pytest.raises(UserError, match=r"line 1 is longer than 1\.0 MiB, which no server log line is"):
        runfile.read_text(log, kind=runfile.LOG)
