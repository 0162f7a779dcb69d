"""RUN/counters/<L>.json as a model: each node's RDMA port counters read before and after one length,
and what a difference of two readings means (the counters' unit and width).

The sweep records them (sweep.counters) and the witness sets them against the KV; the fabric reads the
counters from sysfs in the shape a reading holds. ``port_xmit_data`` and ``port_rcv_data`` count 4-byte
words; a 64-bit (extended) counter never wraps in practice, a legacy 32-bit one tops out at 2^32 - 1 words,
so its difference is only a measurement when the port could not have moved 2^32 words between readings.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

WORD_BYTES = 4
LEGACY_MAX = 2**32 - 1
UNIT = "port_xmit_data and port_rcv_data count 4-byte words; at is seconds since the epoch"
_RATE = re.compile(r"^\s*([\d.]+)\s*Gb/sec")


class CounterReading(BaseModel):
    """One node's ports at one moment: {"<dev>/<port>": {"state", "rate", "extended", counters..., "hw_counters"}}."""

    model_config = ConfigDict(extra="allow")

    at: float = Field(description="seconds since the epoch")
    ports: dict[str, dict[str, Any]]


class CounterNode(BaseModel):
    """A node's readings around the length, or why there are none."""

    model_config = ConfigDict(extra="allow")

    source: str | None = Field(description="where the counters were read")
    rdma_devices: list[str] | None = None
    error: str | None = None
    before: CounterReading | None = None
    after: CounterReading | None = None


class CountersRecord(BaseModel):
    """The record of one length. Its nodes are read as written: the witness judges each node's readings
    itself and names what is wrong with one, rather than the whole file being refused."""

    model_config = ConfigDict(extra="allow")

    prompt_len: Any = None
    unit: str | None = None
    nodes: dict[str, Any]

    @classmethod
    def of(cls, prompt_len: int, nodes: dict[str, CounterNode]) -> CountersRecord:
        return cls(prompt_len=prompt_len, unit=UNIT,
                   nodes={role: node.model_dump(exclude_unset=True) for role, node in nodes.items()})

    def to_json(self) -> dict:
        return self.model_dump(exclude_unset=True)


def parse_rate(text: str | None) -> float | None:
    """A port's rate as sysfs writes it ("400 Gb/sec (4X NDR)"), in Gb/s; None when it is not one."""
    m = _RATE.match(text or "")
    return float(m.group(1)) if m else None


def is_wide(before: int, after: int, extended: bool = False) -> bool:
    """Whether a data counter of these readings is 64 bits wide (so it never wraps in practice)."""
    return extended or before > LEGACY_MAX or after > LEGACY_MAX


def words_moved(before: int, after: int, window_s: float, rate: str | None,
                extended: bool = False) -> tuple[int | None, str | None]:
    """Words a data counter counted between two readings, or None and why it cannot tell."""
    if is_wide(before, after, extended):
        if after >= before:
            return after - before, None
        return None, f"went back from {before} to {after} words (counters reset during the length?)"
    gb_s = parse_rate(rate)
    most = gb_s * 1e9 / 8 / WORD_BYTES * window_s if gb_s else None
    if most is None or most >= LEGACY_MAX + 1:
        return None, (f"stayed within 32 bits ({before} -> {after} words) while the port could move 2^32 words in "
                      f"the {window_s:.1f} s between readings: a legacy 32-bit counter may have wrapped, possibly "
                      "more than once")
    if after == LEGACY_MAX:
        return None, "stopped at 2^32-1 words (a legacy 32-bit counter that saturated)"
    return (after - before if after >= before else after + LEGACY_MAX + 1 - before), None
