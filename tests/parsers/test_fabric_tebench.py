"""transfer_engine_bench's result line as the tool prints it: C++ streams switch to scientific notation for
large or small values (1.5e+02), which is read as the number written (chosen: read, not refused: it is the
tool's own output); a result line that cannot be read is named as such, not reported as missing."""

import pytest

from pdrepro.parsers.tebench import parse_result


@pytest.mark.parametrize("printed, expected", [
    ("1.5e+02 GB/s", 150.0), ("1.5E2 GB/s", 150.0), ("2e-1 GiB/s", 0.2 * 2**30 / 1e9), ("1.2e3 Gb/s", 150.0),
    ("1.5e+02", 150.0),
])
def test_scientific_notation_throughput_is_read_as_written(printed, expected):
    result = parse_result(f"I1201 Test completed: duration 10.00, batch count 1200, throughput {printed}\n")
    assert result.throughput_GB_s == pytest.approx(expected)


def test_scientific_notation_duration_is_read():
    result = parse_result("Test completed: duration 1.0e+01, batch count 12, throughput 3.5 GB/s\n")
    assert result.duration_s == 10.0


def test_an_unreadable_result_line_is_named_not_called_missing():
    with pytest.raises(ValueError) as info:
        parse_result("Test completed: duration 10.00, batch count 12, throughput nan GB/s\n")
    assert "no 'Test completed" not in str(info.value) and "throughput nan GB/s" in str(info.value)
