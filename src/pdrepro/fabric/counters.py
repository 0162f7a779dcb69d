"""RDMA port counters: reading them from sysfs and turning two readings into bytes.

``ports/<p>/counters/port_xmit_data`` and ``port_rcv_data`` count 4-byte words
(octets / 4). The kernel shows the extended, 64-bit performance counters when
the device has them, and then adds ``unicast_xmit_packets`` and friends to the
same folder (mlx5 devices do); otherwise the counters may be the legacy 32-bit
ones, which top out at 2^32 - 1 words (16 GiB). A difference of counters that
may be 32 bits wide is only a measurement when the port could not have moved
2^32 words between the readings: then a counter that ran backwards wrapped
exactly once, and one at 2^32 - 1 stopped there (saturated).

What a difference of two readings means (unit, width, wrap) lives with the run's counter record
(rundir.counters), which the witness reads. A reading is a plain dict, so it can travel in JSON and come back from a
shell on another node (``SNAPSHOT_SCRIPT``) in the same shape::

    {"mlx5_0/1": {"state": "ACTIVE", "rate": "400 Gb/sec (4X NDR)", "extended": True,
                  "port_xmit_data": 123, "port_rcv_data": 456,
                  "hw_counters": {"out_of_sequence": 0, ...}}}
"""

from __future__ import annotations

from pathlib import Path

from ..core import runfile

DATA_COUNTERS = ("port_xmit_data", "port_rcv_data")

# Prints one "<dev>/<port> <name> <value>" line per counter, the same reading
# read_ports() takes, from any node (run in a container with host networking,
# whose /sys/class/infiniband is the node's; IB_ROOT points it elsewhere).
SNAPSHOT_SCRIPT = r"""
for p in "${IB_ROOT:-/sys/class/infiniband}"/*/ports/*; do
  [ -d "$p" ] || continue
  d=${p%/ports/*}; id="${d##*/}/${p##*/}"
  echo "$id state $(cat "$p/state" 2>/dev/null | sed 's/^[0-9]*: *//')"
  echo "$id rate $(cat "$p/rate" 2>/dev/null)"
  [ -e "$p/counters/unicast_xmit_packets" ] && echo "$id extended 1"
  for f in port_xmit_data port_rcv_data; do
    [ -r "$p/counters/$f" ] && echo "$id $f $(cat "$p/counters/$f")"
  done
  for f in "$p"/hw_counters/*; do
    [ -f "$f" ] && [ -r "$f" ] && echo "$id hw.${f##*/} $(cat "$f" 2>/dev/null)"
  done
done
exit 0
"""


def _int(text: str | None) -> int | None:
    try:
        return int((text or "").strip())
    except ValueError:
        return None


def _read(path: Path) -> str | None:
    try:
        return runfile.read_host(path)  # capped: a FIFO or a huge file there is exit 2, not a hang
    except OSError:  # some hw_counters refuse reads (EINVAL) on some firmware
        return None


def read_ports(ib_root: Path) -> dict:
    """Counters of every port under ``ib_root`` (/sys/class/infiniband or a copy)."""
    found: dict = {}
    if not ib_root.is_dir():
        return found
    for dev in sorted(ib_root.iterdir()):
        ports = dev / "ports"
        if not ports.is_dir():
            continue
        for port in sorted(ports.iterdir(), key=lambda p: p.name):
            entry: dict = {"state": ((_read(port / "state") or "").split(":", 1)[-1].strip() or None),
                           "rate": (_read(port / "rate") or "").strip() or None}
            if (port / "counters" / "unicast_xmit_packets").exists():
                entry["extended"] = True
            for name in DATA_COUNTERS:
                value = _int(_read(port / "counters" / name))
                if value is not None:
                    entry[name] = value
            hw = port / "hw_counters"
            if hw.is_dir():
                entry["hw_counters"] = {f.name: v for f in sorted(hw.iterdir())
                                        if f.is_file() and (v := _int(_read(f))) is not None}
            found[f"{dev.name}/{port.name}"] = entry
    return found


def parse_snapshot(text: str) -> dict:
    """The output of SNAPSHOT_SCRIPT, in read_ports()'s shape."""
    found: dict = {}
    for line in text.splitlines():
        parts = line.split(" ", 2)
        if len(parts) < 3 or "/" not in parts[0]:
            continue
        port, name, value = parts
        entry = found.setdefault(port, {"state": None, "rate": None})
        if name in ("state", "rate"):
            entry[name] = value.strip() or None
        elif name == "extended":
            entry["extended"] = True
        elif name in DATA_COUNTERS:
            if (number := _int(value)) is not None:
                entry[name] = number
        elif name.startswith("hw."):
            if (number := _int(value)) is not None:
                entry.setdefault("hw_counters", {})[name[3:]] = number
    return found
