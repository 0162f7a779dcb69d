"""Reading the result table of perftest's ib_write_bw.

perftest prints "BW average[MB/sec]" by default, where MB means 2**20 bytes,
and "BW average[Gb/sec]" with --report_gbits, where Gb means 10**9 bits.
Both are turned into decimal GB/s, the unit of the published table.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..core.units import GB, MiB

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
    # Rows in the table: 1 for one message size, ~23 for an -a sweep (2 B ... 8 MiB).
    sizes_seen: int = 1

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
    """The result of an ib_write_bw / ib_read_bw / ib_send_bw run: with -a (a sweep of message
    sizes) the row of the largest size, the one that says what the link carries.

    Lines between rows (perftest's CPU frequency warnings go to stderr and land
    between the rows when both streams are captured together) are skipped; the
    table ends at perftest's dashed line.
    """
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = _HEADER.search(line)
        if not m:
            continue
        unit = m.group(2)
        rows = []
        for row in lines[i + 1:]:
            if row.strip().startswith("---"):
                break
            r = _ROW.match(row)
            if r:
                rows.append(r)
        if not rows:
            break
        r = max(rows, key=lambda r: int(r.group(1)))
        return BwResult(int(r.group(1)), int(r.group(2)), to_GB_s(float(r.group(3)), unit),
                        to_GB_s(float(r.group(4)), unit), float(r.group(5)), unit, len(rows))
    raise ValueError("no result row under a 'BW peak[...] BW average[...]' header")
