"""Reading Mooncake's transfer_engine_bench output.

The initiator logs "Test completed: duration D, batch count N, throughput X U/s"
where U is its --report_unit: GB, MB, KB are decimal, GiB/MiB/KiB binary and
Gb/Mb/Kb bits (decimal). The default, GB, is 10**9 bytes.
The target logs "Transfer Engine RPC using P2P handshake, listening on H:P",
where H:P is the segment id an initiator connects to.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

UNITS = {"GB": 1e9, "GiB": 2**30, "Gb": 1e9 / 8, "MB": 1e6, "MiB": 2**20, "Mb": 1e6 / 8,
         "KB": 1e3, "KiB": 2**10, "Kb": 1e3 / 8}
_DONE = re.compile(r"Test completed: duration ([\d.]+), batch count (\d+), throughput ([\d.]+) (GiB|GB|Gb|MiB|MB|Mb|KiB|KB|Kb)/s")
_LISTEN = re.compile(r"listening on (\S+):(\d+)")


@dataclass(frozen=True)
class TeResult:
    duration_s: float
    batch_count: int
    throughput_GB_s: float
    printed: str


def parse_result(text: str) -> TeResult:
    found = _DONE.findall(text)
    if not found:
        raise ValueError("no 'Test completed: ... throughput ...' line")
    duration, batches, value, unit = found[-1]
    return TeResult(float(duration), int(batches), float(value) * UNITS[unit] / 1e9, f"{value} {unit}/s")


def parse_segment(text: str) -> str | None:
    m = _LISTEN.search(text)
    return f"{m.group(1)}:{m.group(2)}" if m else None
