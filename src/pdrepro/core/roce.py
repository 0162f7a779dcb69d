"""RoCE v2 framing, spelled out once: the RoCE MTU a netdev MTU allows, and what a port can carry of payload.

Two different byte counts live here on purpose. The kernel picks a port's active RoCE MTU as the largest IB MTU
that fits in the netdev MTU less 96 bytes (it reserves GRH, UDP, BTH, the largest extended headers and ICRC),
so a 1500-byte netdev gives 1024. The wire, in turn, carries 82 bytes besides the payload of each packet:
preamble and start delimiter 8, inter-packet gap 12, Ethernet header 14, FCS 4, IPv4 20, UDP 8, BTH 12 and
ICRC 4. The first says which MTU a port runs at; the second what share of the line rate is left for the KV.
"""

from __future__ import annotations

from typing import Literal, get_args

# The IB MTUs a RoCE port may run at, smallest first (the values the kernel's enum ib_mtu stands for).
IbMtu = Literal[256, 512, 1024, 2048, 4096]
IB_MTUS: tuple[int, ...] = get_args(IbMtu)
# What the kernel keeps back from the netdev MTU when it derives the RoCE MTU (see above), bytes.
KERNEL_ROCE_RESERVE = 96
# What the wire carries per RoCE v2 packet besides its payload (see above), bytes.
WIRE_OVERHEAD_BYTES = 82
# The published run's RoCE MTU: Mooncake asks for up to 4096, the largest there is.
FULL_MTU = 4096


def roce_mtu(netdev_mtu: int) -> int:
    """The active RoCE MTU the kernel gives a port whose netdev has NETDEV_MTU bytes; 0 where none fits."""
    fits = [m for m in IB_MTUS if m <= netdev_mtu - KERNEL_ROCE_RESERVE]
    return fits[-1] if fits else 0


def payload_ceiling_GB_s(line_rate_GB_s: float, mtu: int) -> float:
    """The most payload a RoCE v2 link of LINE_RATE_GB_S (raw, decimal GB/s) carries at path MTU MTU (bytes),
    in decimal GB/s: each full packet of MTU payload bytes takes MTU + 82 bytes of the line."""
    if mtu <= 0:
        raise ValueError(f"path MTU must be positive bytes, not {mtu}")
    if line_rate_GB_s < 0:
        raise ValueError(f"line rate must not be negative, not {line_rate_GB_s} GB/s")
    return line_rate_GB_s * mtu / (mtu + WIRE_OVERHEAD_BYTES)
