"""The one way a run directory's files (and a stack record) are read: only regular files, no larger than
their kind of file ever is, lines of a sane length, text in the encoding it says it is in, and anything else
refused on one line naming the file.

Each kind has a cap on its size (``Kind``): a JSON record (summary, sweep state, counters, provenance,
baseline, a stack record) is kilobytes, so 16 MiB is already no record; a server log may be hundreds of MB
and is streamed line by line (``lines``), never held whole. A stray 2 GB file where a record belongs is
one line and exit 2, not a MemoryError. tests/core/test_one_reader.py walks the package's syntax tree and
holds every other way of opening a file to a named allowlist.

A FIFO blocks a reader forever, a device (or a symlink to /dev/zero) never ends, a multi-megabyte line
is no line SGLang or the bench client writes; all of them mean the file is not what the run left there.
A byte-order mark says how the text is encoded (an editor saved it as UTF-8 with a mark, PowerShell's
``>`` wrote UTF-16): such text is read, the mark dropped. A gzip file or UTF-16 without its mark is refused
with the command that turns it back into the plain text the run's writer produced.
"""

from __future__ import annotations

import codecs
import hashlib
import io
import json
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .errors import UserError

# Request-stats lines are about a kilobyte: a line of a log or record past this is no line its writer wrote.
MAX_LINE = 1 << 20

_NOT_THE_RUNS = "it is not the file the run wrote: replace it, or move it out of the run directory"


@dataclass(frozen=True)
class Kind:
    """A kind of file a run holds, and the most bytes one of them is ever read up to (None: no cap, for files
    only ever streamed line by line)."""

    name: str
    cap: int | None
    line_cap: int = MAX_LINE  # the longest line one of them ever holds
    fix: str = _NOT_THE_RUNS  # what a file of this kind that is too large or no regular file asks of the user


MiB = 1 << 20
# The JSON records the bundle writes (summary.json, sweep-state.json, counters/<L>.json, provenance.json,
# baseline.json, engine-ceiling.json, stack.json, a smoke agent's raw/<role>.json): tens of kilobytes.
RECORD = Kind("JSON record", 16 * MiB)
# A scenario file: a few kilobytes of YAML.
SCENARIO = Kind("scenario file", 4 * MiB)
# One /metrics scrape of an SGLang server: hundreds of kilobytes.
METRICS = Kind("/metrics scrape", 64 * MiB)
# A bench client's JSONL result: one line per length, which with --output-details carries every request's
# inter-token latencies and text (200 requests of 512 tokens wrote a 2.9 MB line on the H200), so a line is
# as long as the requests make it: capped where the file is, and parsed whole by its readers anyway.
BENCH = Kind("bench result", 512 * MiB, line_cap=512 * MiB)
# A server log: hundreds of MB on a long sweep; streamed, and whole only where a caller needs its text.
LOG = Kind("server log", 8 * 1024 * MiB)
# Any other text of a run read whole (the default of ``read_text``): held in memory, so capped.
TEXT = Kind("text file", 1024 * MiB)

# The host's own files, read by the same rules (``read_host``): a FIFO or a 2.5 GiB file where a kernel attribute
# belongs (a copy of /sys given as --sysfs-root, a tree someone edited) is one line and exit 2, never a hang or
# a MemoryError. /proc reports a size of 0 and sysfs one of 4096 whatever they hold, so these caps bound the
# bytes read, not only the size the file claims.
_HOST_FIX = "the kernel never shows one; if this tree is a copy of the host's (--sysfs-root), copy it again"
# A sysfs attribute: the kernel prints at most a page (4 KiB) into one.
SYSFS = Kind("sysfs attribute", MiB, fix=_HOST_FIX)
# A /proc file: a process's stat, status, limits, command line and environment (ARG_MAX bounds the last two),
# the boot id, the socket tables of /proc/net (a line per socket: 64 MiB is some 400 000 sockets).
PROC = Kind("/proc file", 64 * MiB, fix=_HOST_FIX)


def _human(size: int) -> str:
    return f"{size / (1 << 30):.1f} GiB" if size >= 1 << 30 else f"{size / MiB:.1f} MiB"


class TooLarge(UserError):
    pass


class Unreadable(UserError, OSError):
    """An OS error opening a file: still an OSError to callers that handle one, a UserError (one line, exit 2)
    to the command line where none does."""


_BOMS = ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))
_GZIP = b"\x1f\x8b"


class NotARegularFile(UserError):
    pass


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory")):
        if test(mode):
            return name
    return "not a regular file"


def _open(path: Path, kind: Kind) -> io.BufferedReader:
    """``path`` opened for reading once it is known to be a regular file no larger than ``kind`` allows
    (symlinks followed: their target counts). O_NONBLOCK keeps the open of a FIFO from waiting for a writer
    that never comes. Any OS error is one line naming the file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise  # absence is the callers' to judge (many files of a run are optional)
    except OSError as exc:
        raise Unreadable(f"{path}: cannot be read ({exc.strerror}); make it readable, or move it out of the "
                         "run directory") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        via = f" (a symlink to {os.readlink(path)})" if os.path.islink(path) else ""
        fix = "put the file itself there (or move this out of the way)" if kind.fix is _NOT_THE_RUNS else kind.fix
        raise NotARegularFile(f"{path}{via}: is {_kind(st.st_mode)}, not a regular file; nothing reads it to the end: "
                              f"{fix}")
    if kind.cap is not None and st.st_size > kind.cap:
        os.close(fd)
        raise _too_large(path, _human(st.st_size), kind, kind.cap)
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def _too_large(path: Path, size: str, kind: Kind, cap: int) -> TooLarge:
    return TooLarge(f"{path}: is {size}, larger than any {kind.name} ({_human(cap)} at most); {kind.fix}")


def _encoding(path: Path, head: bytes) -> str:
    for bom, name in _BOMS:
        if head.startswith(bom):
            return name
    if head.startswith(_GZIP):
        raise UserError(f"{path}: is gzip-compressed; decompress it in place (gunzip -c {path}.gz > {path}, "
                        "after renaming it to .gz), the run reads plain text")
    if len(head) >= 4 and head[1::2].count(0) >= len(head) // 4 and head[0::2].count(0) == 0:
        raise UserError(f"{path}: looks like UTF-16 text without a byte-order mark; convert it "
                        f"(iconv -f UTF-16LE -t UTF-8 {path} > {path.name}.utf8 and move it back)")
    return "utf-8"


def _too_long(path: Path, number: int, kind: Kind) -> UserError:
    return UserError(f"{path}: line {number} is longer than {_human(kind.line_cap)}, which no {kind.name} line is; the file is "
                     "damaged or not the one the run wrote: replace it (or move it out of the run directory)")


def lines(path: Path | str, errors: str = "replace", kind: Kind = LOG) -> Iterator[str]:
    """The file's lines (with their line ends), decoded as its mark says, undecodable bytes replaced
    (``errors="strict"``: a UnicodeDecodeError instead, for files people write by hand); streamed, so a
    log of any size within ``kind``'s cap costs one line of memory."""
    path = Path(path)
    with _open(path, kind) as raw:
        encoding = _encoding(path, raw.peek(64)[:64])
        text = io.TextIOWrapper(raw, encoding=encoding, errors=errors, newline="")
        number = 0
        while True:
            line = text.readline(kind.line_cap + 1)
            if not line:
                return
            number += 1
            if len(line) > kind.line_cap:
                raise _too_long(path, number, kind)
            yield line


def read_text(path: Path | str, errors: str = "replace", kind: Kind = TEXT) -> str:
    """The whole file as text, under the same rules as ``lines``, no larger than ``kind``'s cap."""
    return "".join(lines(path, errors, kind))


def read_json(path: Path | str, kind: Kind = RECORD):
    """The file's JSON (of any shape: the caller validates it), no larger than ``kind``'s cap. Text that is
    no JSON is a ValueError (UnicodeDecodeError included), as ``json.loads`` raises it."""
    return json.loads(read_text(path, kind=kind))


def read_bytes(path: Path | str, kind: Kind) -> bytes:
    """The file's bytes, no larger than ``kind``'s cap (a regular file only, as for text)."""
    path = Path(path)
    with _open(path, kind) as raw:
        return raw.read()


def read_host_bytes(path: Path | str, kind: Kind = SYSFS) -> bytes:
    """A host file's bytes (a sysfs attribute, a /proc entry), read as the run's files are (a regular file,
    opened without waiting for a writer) and never more than ``kind``'s cap plus one byte: a file that holds
    more is TooLarge whatever size it claims. Absence is FileNotFoundError and any other OS error an
    ``Unreadable`` (an OSError: unused GID slots answer EINVAL, another user's process EACCES, for callers
    that treat those as no value); the file's type or size is a UserError, one line and exit 2."""
    path = Path(path)
    assert kind.cap is not None, "a host file is read whole, so its kind has a cap"
    with _open(path, kind) as raw:
        try:
            data = raw.read(kind.cap + 1)
        except OSError as exc:
            raise Unreadable(f"{path}: cannot be read ({exc.strerror})") from None
    if len(data) > kind.cap:
        raise _too_large(path, f"more than {_human(kind.cap)}", kind, kind.cap)
    return data


def read_host(path: Path | str, kind: Kind = SYSFS, errors: str = "replace") -> str:
    """A host file's text, under ``read_host_bytes``'s rules (undecodable bytes replaced, or with
    ``errors="strict"`` a UnicodeDecodeError)."""
    return read_host_bytes(path, kind).decode("utf-8", errors)


def sha256(path: Path | str) -> str | None:
    """The sha256 of the regular file at ``path``, streamed in blocks (a log of any size in constant memory), opened
    without following a link or waiting on a FIFO; None for anything else there (nothing, a link, a FIFO, a
    folder, a file this user cannot read). The one content digest: a copy of a run's file is found by it, and a
    runner's own outputs are told from an edited one by it."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return None
        digest = hashlib.sha256()
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
