"""Reading the result table of perftest's ib_write_bw.

perftest prints "BW average[MB/sec]" by default, where MB means 2**20 bytes,
and "BW average[Gb/sec]" with --report_gbits, where Gb means 10**9 bits.
Both are turned into decimal GB/s, the unit of the published table.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..units import GB, MiB

_HEADER = re.compile(r"BW peak\[(MB/sec|Gb/sec)\]\s+BW average\[(MB/sec|Gb/sec)\]")
_ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s*$")


@dataclass(frozen=True)
class BwResult:
    msg_bytes: int
    iterations: int
    peak_GB_s: float
    average_GB_s: float
    msg_rate_Mpps: float
    unit_printed: str

    @property
    def average_Gb_s(self) -> float:
        return self.average_GB_s * 8


def to_GB_s(value: float, unit: str) -> float:
    if unit == "Gb/sec":
        return value / 8
    if unit == "MB/sec":
        return value * MiB / GB
    raise ValueError(unit)


def parse_bw(text: str) -> BwResult:
    """The (last) result row of an ib_write_bw / ib_read_bw / ib_send_bw run."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = _HEADER.search(line)
        if not m:
            continue
        unit = m.group(2)
        for row in lines[i + 1:]:
            r = _ROW.match(row)
            if r:
                return BwResult(int(r.group(1)), int(r.group(2)), to_GB_s(float(r.group(3)), unit),
                                to_GB_s(float(r.group(4)), unit), float(r.group(5)), unit)
        break
    raise ValueError("no result row under a 'BW peak[...] BW average[...]' header")
