"""Per-request timing lines that SGLang servers log with ``--enable-request-time-stats-logging``.

Attention-TP rank 0 logs one line per finished request:
``ReqTimeStats(rid=..., bootstrap_room=..., input_len=..., ..., type=prefill): <fields>``.
Builds differ: an older spelling ``Req Time Stats(`` with ``input len=``,
extra header keys such as ``attempts``, durations as ``key=1.23ms`` or
``key(1.23ms)``, and ``GB/s``/``MB`` with or without a space. The parser takes
any ``key=value`` / ``key(value)`` pair it finds.

Units: the server's ``transfer_speed ... GB/s`` and ``transfer_total ... MB``
are binary (GiB/s, MiB), and ``transfer_total`` is rank 0's share only.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..core import runfile
from ..core.units import GiB, MiB
from .serverstart import START_MARKER, start_mode

# Linear time on any line (a 40 KB line once took 37 s): a key may start only where no word character or
# '#' precedes it, so finditer does not rescan every suffix of a long word; the head's keys are read by
# splitting, not by a lazy pattern whose spaces two quantifiers could share.
_LINE = re.compile(r"(?:ReqTimeStats|Req Time Stats)\((?P<head>[^)]*)\)\s*:?(?P<body>.*)$")
_OPENERS = ("ReqTimeStats(", "Req Time Stats(")
_HEAD_KEY = re.compile(r"[A-Za-z_][\w ]*")
_BODY_ITEM = re.compile(
    r"(?<![\w#])(?P<key>#?[A-Za-z_]\w*)\s*(?:=|\()\s*(?P<num>-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)\s*(?P<unit>GB/s|MB|ms|s)?"
)
_TIME = re.compile(r"^\[(?P<ts>\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:\.\d+)?)")


@dataclass(frozen=True)
class ReqStat:
    line_no: int
    rid: str
    kind: str                    # prefill | decode | unified | ...
    input_len: int | None
    cached_input_len: int | None
    output_len: int | None
    # Durations in seconds, keyed by the server's name for them.
    durations_s: dict[str, float] = field(default_factory=dict)
    transfer_speed_GiB_s: float | None = None
    transfer_total_MiB: float | None = None
    retries: int | None = None
    timestamp: str | None = None
    bootstrap_room: int | None = None
    # When the request entered the server, seconds since the epoch (the server's clock, millisecond digits).
    entry_time_s: float | None = None

    @property
    def is_health_check(self) -> bool:
        return self.rid.upper().startswith("HEALTH_CHECK")

    @property
    def is_server_warmup(self) -> bool:
        """The server's own warm-up request, sent to itself before it answers /health: in a PD
        deployment every routed request carries a random bootstrap room, the warm-up room 0."""
        return self.bootstrap_room == 0 and not self.is_health_check

    @property
    def transfer_bytes_rank0(self) -> float | None:
        return None if self.transfer_total_MiB is None else self.transfer_total_MiB * MiB

    @property
    def transfer_s(self) -> float | None:
        """Seconds the KV transfer took: rank 0's bytes over rank 0's speed."""
        if not self.transfer_total_MiB or not self.transfer_speed_GiB_s:
            return None
        return self.transfer_total_MiB * MiB / (self.transfer_speed_GiB_s * GiB)


def _head(text: str) -> dict[str, str]:
    items = {}
    for part in text.split(","):
        key, eq, value = part.partition("=")
        key = key.strip()
        if eq and _HEAD_KEY.fullmatch(key):
            value = value.strip()
            if value[:1] in ("'", '"'):
                # A quoted value ends at its closing quote, as written.
                end = value.find(value[0], 1)
                value = value[: end + 1] if end > 0 else value
            items[key.replace(" ", "_")] = value.strip("'\"")
    return items


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def parse_line(line: str, line_no: int = 0) -> ReqStat | None:
    """One log line to a ReqStat, or None when it is not a request-stats line."""
    # The leftmost opener is the only one that can match: if no ')' follows it, none follows a later one.
    starts = [i for i in (line.find(o) for o in _OPENERS) if i >= 0]
    m = _LINE.match(line, min(starts)) if starts else None
    if not m:
        return None
    head = _head(m.group("head"))
    durations: dict[str, float] = {}
    speed = total = None
    retries = None
    entry = None
    for item in _BODY_ITEM.finditer(m.group("body")):
        key, num, unit = item.group("key"), float(item.group("num")), item.group("unit")
        if key == "transfer_speed":
            speed = num
        elif key == "transfer_total":
            total = num
        elif key in ("#retries", "retries"):
            retries = int(num)
        elif key == "entry_time" and unit is None:
            entry = num
        elif unit == "ms":
            durations[key] = num / 1000.0
        elif unit == "s":
            durations[key] = num
    ts = _TIME.match(line)
    return ReqStat(
        line_no=line_no,
        rid=head.get("rid", ""),
        kind=head.get("type", "").lower(),
        input_len=_int(head.get("input_len")),
        cached_input_len=_int(head.get("cached_input_len")),
        output_len=_int(head.get("output_len")),
        durations_s=durations,
        transfer_speed_GiB_s=speed,
        transfer_total_MiB=total,
        retries=retries,
        timestamp=ts.group("ts") if ts else None,
        bootstrap_room=_int(head.get("bootstrap_room")),
        entry_time_s=entry,
    )


@dataclass(frozen=True)
class LogScan:
    path: Path
    stats: tuple[ReqStat, ...]
    lines: int
    # Lines that named ReqTimeStats but could not be read (e.g. no input_len).
    unreadable: tuple[int, ...]
    # (line, the offending key=value) of lines with a figure no measurement can have.
    invalid: tuple[tuple[int, str], ...] = ()
    # (line, line) of two server starts that ran at once: two servers writing one file.
    interleaved: tuple[int, int] | None = None
    # Per group of a bounded scan (``Keep``): the readable lines of the group counted but not kept (the oldest).
    dropped: Mapping[Hashable, int] = field(default_factory=dict)
    # (line, disaggregation mode) of the server's latest start in the log, when it names one.
    mode: tuple[int, str] | None = None


@dataclass(frozen=True)
class Keep:
    """Which request-stats lines a scan holds: per group (``group`` of a line: a prompt length, say) the newest
    ``cap(group)``, the older ones only counted. The analysis judges the last requests of each length (as many
    as the bench completed), so a log of a million extra lines costs their count, not their memory."""

    group: Callable[[ReqStat], Hashable]
    cap: Callable[[Hashable], int]


_NEGATIVE = re.compile(r"(?<![\w#])(#?[A-Za-z_]\w*)\s*[=(]\s*(-\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)")


def _figures(stat: ReqStat) -> tuple:
    return (stat.input_len, stat.cached_input_len, stat.output_len, sorted(stat.durations_s.items()),
            stat.transfer_speed_GiB_s, stat.transfer_total_MiB, stat.retries)


# A server's start (it logs its arguments once) and the line it logs when it is ready for requests.
_START, _READY = "server_args=", "fired up and ready to roll"
_PORT = re.compile(r"[(,]\s*port=(\d+)")


class _Starts:
    """Notices two servers logging into one file: two starts before either is ready, both then ready
    (a start that died before it was ready, then a restart, has one ready line), or two starts that
    name different ports."""

    def __init__(self):
        # Only the latest four events are ever looked at: a log of a million requests holds none of them.
        self.events: deque[tuple[str, int]] = deque(maxlen=4)
        self.ports: dict[str, int] = {}
        self.found: tuple[int, int] | None = None

    def line(self, line: str, number: int) -> None:
        if self.found is not None:
            return
        if _START in line:
            self.events.append(("S", number))
            port = _PORT.search(line)
            if port:
                first = next(iter(self.ports.values()), None)
                self.ports.setdefault(port.group(1), number)
                if len(self.ports) > 1 and first is not None:
                    self.found = (first, number)
        elif _READY in line:
            self.events.append(("R", number))
            if [e for e, _ in self.events] == ["S", "S", "R", "R"]:
                self.found = (self.events[-4][1], self.events[-3][1])

    def request(self) -> None:
        self.events.append(("Q", 0))


def parse_log(path: Path, keep: Keep | None = None) -> LogScan:
    """All request-stats lines in a server log (with ``keep``: the newest of each of its groups, the rest
    counted in ``dropped``), in file order; other lines are skipped. A request logged twice is kept twice
    here: ``merge_scans`` decides what repeats mean."""
    path = Path(path)
    stats: list[ReqStat] = []
    unreadable: list[int] = []
    invalid: list[tuple[int, str]] = []
    groups: dict[Hashable, deque[ReqStat]] = {}
    dropped: dict[Hashable, int] = {}
    mode: tuple[int, str] | None = None
    count = 0
    starts = _Starts()
    for count, line in enumerate(runfile.lines(path), 1):
        if "Time Stats(" not in line and "ReqTimeStats(" not in line:
            starts.line(line, count)
            if START_MARKER in line:
                named = start_mode(line)
                mode = (count, named) if named else None
            continue
        starts.request()
        stat = parse_line(line.rstrip("\r\n"), count)
        if stat is None or stat.input_len is None:
            unreadable.append(count)
            continue
        negative = _NEGATIVE.search(line[line.index("Stats("):])
        if negative:
            invalid.append((count, f"{negative.group(1)}={negative.group(2)}"))
            continue
        if keep is None:
            stats.append(stat)
            continue
        key = keep.group(stat)
        held = groups.get(key)
        if held is None:
            held = groups[key] = deque(maxlen=max(1, keep.cap(key)))
        if len(held) == held.maxlen:
            dropped[key] = dropped.get(key, 0) + 1
        held.append(stat)
    if keep is not None:
        stats = sorted((stat for held in groups.values() for stat in held), key=lambda stat: stat.line_no)
    return LogScan(path=path, stats=tuple(stats), lines=count, unreadable=tuple(unreadable), invalid=tuple(invalid),
                   interleaved=starts.found, dropped=dropped, mode=mode)


@dataclass(frozen=True)
class MergedScan:
    """The request-stats lines of several servers' logs of one role, as one request list."""

    # (log, stat) in the order the requests finished: by timestamp when every line has one, else log by log.
    located: tuple[tuple[Path, ReqStat], ...]
    # (rid, first file, its line, later file, its line) of lines repeating an earlier line of the same request
    # with the same figures (a log concatenated with its rotated copy, one log copied under two names): the
    # request counted once.
    duplicates: tuple[tuple[str, Path, int, Path, int], ...] = ()
    # The same, of requests logged twice with different figures (logs of different runs mixed).
    conflicts: tuple[tuple[str, Path, int, Path, int], ...] = ()

    @property
    def stats(self) -> list[ReqStat]:
        return [stat for _, stat in self.located]


def merge_scans(scans: list[LogScan]) -> MergedScan:
    """One request list over the logs of every server of a role. A request id names one request across
    the servers and within a log, so the same id twice, in one file or in two, is either the same line
    twice or two runs' logs mixed."""
    seen: dict[tuple[str, str], tuple[Path, ReqStat]] = {}
    located: list[tuple[Path, ReqStat]] = []
    duplicates: list[tuple[str, Path, int, Path, int]] = []
    conflicts: list[tuple[str, Path, int, Path, int]] = []
    for scan in scans:
        for stat in scan.stats:
            key = (stat.rid, stat.kind)
            if stat.rid and key in seen:
                path, first = seen[key]
                repeat = (stat.rid, path, first.line_no, scan.path, stat.line_no)
                (duplicates if _figures(first) == _figures(stat) else conflicts).append(repeat)
                continue
            seen[key] = (scan.path, stat)
            located.append((scan.path, stat))
    if len(scans) > 1 and all(stat.timestamp for _, stat in located):
        # The router spreads requests over the servers: their finishing order is the timestamps' (stable
        # sort, so lines of one second keep their file order).
        located.sort(key=lambda item: (item[1].timestamp or "").replace("T", " "))
    return MergedScan(located=tuple(located), duplicates=tuple(duplicates), conflicts=tuple(conflicts))
