"""Reading Mooncake's transfer_engine_bench output.

The initiator logs "Test completed: duration D, batch count N, throughput X U/s"
where U is its --report_unit: GB, MB, KB are decimal, GiB/MiB/KiB binary and
Gb/Mb/Kb bits (decimal). The default, GB, is 10**9 bytes. Builds before
--report_unit (late 2024 to early 2025) print the bare number, bytes per
second over 10**9: read as GB/s, with a note saying so.
The target logs "Transfer Engine RPC using P2P handshake, listening on H:P",
where H:P is the segment id an initiator connects to.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..core.units import GB, MB, GiB, MiB

UNITS = {"GB": GB, "GiB": GiB, "Gb": GB / 8, "MB": MB, "MiB": MiB, "Mb": MB / 8,
         "KB": 1e3, "KiB": 2**10, "Kb": 1e3 / 8}
# A C++ stream prints large or small figures in scientific notation (1.5e+02): that is the number written.
_NUM = r"(\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?)"
_DONE = re.compile(rf"Test completed: duration {_NUM}(us)?, batch count (\d+), throughput {_NUM}(?:[ \t]+(\S+))?[ \t]*$",
                   re.MULTILINE)
_DONE_LINE = re.compile(r"Test completed:.*$", re.MULTILINE)
_LISTEN = re.compile(r"listening on (\S+):(\d+)")


@dataclass(frozen=True)
class TeResult:
    duration_s: float
    batch_count: int
    throughput_GB_s: float
    printed: str
    note: str = ""


def parse_result(text: str) -> TeResult:
    found = list(_DONE.finditer(text))
    if not found:
        printed = _DONE_LINE.findall(text)
        if printed:
            raise ValueError(f"the result line {printed[-1].strip()[:200]!r} does not read as a duration, a batch "
                             "count and a throughput figure; rerun the measurement (a nan or inf figure means the "
                             "run moved nothing)")
        raise ValueError("no 'Test completed: ... throughput ...' line")
    m = found[-1]
    duration, micro, batches, value, printed_unit = m.groups()
    # Some builds print the duration in microseconds ("duration 10012345us").
    duration = float(duration) / 1e6 if micro else float(duration)
    if printed_unit is None:
        return TeResult(duration, int(batches), float(value), f"{value}",
                        note=f"throughput printed with no unit ({value}), as transfer_engine_bench builds before "
                             "--report_unit did: read as GB/s (10^9 bytes/s), the only unit they printed")
    unit = printed_unit[:-2] if printed_unit.endswith("/s") else None
    if unit not in UNITS:
        raise ValueError(f"unknown throughput unit in {m.group(0).strip()!r}; expected one of "
                         f"{', '.join(u + '/s' for u in UNITS)}, or none (older builds)")
    return TeResult(duration, int(batches), float(value) * UNITS[unit] / GB, f"{value} {unit}/s")


def parse_segment(text: str) -> str | None:
    m = _LISTEN.search(text)
    return f"{m.group(1)}:{m.group(2)}" if m else None
