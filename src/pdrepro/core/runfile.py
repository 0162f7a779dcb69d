"""The one way a run directory's files are read: only regular files, lines of a sane length, text in the
encoding it says it is in, and anything else refused on one line naming the file.

A FIFO blocks a reader forever, a device (or a symlink to /dev/zero) never ends, a multi-megabyte line
is no line SGLang or the bench client writes; all of them mean the file is not what the run left there.
A byte-order mark says how the text is encoded (an editor saved it as UTF-8 with a mark, PowerShell's
``>`` wrote UTF-16): such text is read, the mark dropped. A gzip file or UTF-16 without its mark is refused
with the command that turns it back into the plain text the run's writer produced.
"""

from __future__ import annotations

import codecs
import io
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from .errors import UserError

# Request-stats lines are about a kilobyte, a bench record with --output-details a few hundred: a line past
# this is no record.
MAX_LINE = 1 << 20

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


def _open(path: Path) -> io.BufferedReader:
    """``path`` opened for reading once it is known to be a regular file (symlinks followed: their target
    counts). O_NONBLOCK keeps the open of a FIFO from waiting for a writer that never comes."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        via = f" (a symlink to {os.readlink(path)})" if os.path.islink(path) else ""
        raise NotARegularFile(f"{path}{via}: is {_kind(mode)}, not a regular file; nothing reads it to the end: "
                              "put the file itself there (or move this out of the way)")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


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


def _too_long(path: Path, number: int) -> UserError:
    return UserError(f"{path}: line {number} is longer than {MAX_LINE >> 20} MiB, which no record is; the file is "
                     "damaged or not the one the run wrote: replace it (or move it out of the run directory)")


def lines(path: Path | str, errors: str = "replace") -> Iterator[str]:
    """The file's lines (with their line ends), decoded as its mark says, undecodable bytes replaced
    (``errors="strict"``: a UnicodeDecodeError instead, for files people write by hand)."""
    path = Path(path)
    with _open(path) as raw:
        encoding = _encoding(path, raw.peek(64)[:64])
        text = io.TextIOWrapper(raw, encoding=encoding, errors=errors, newline="")
        number = 0
        while True:
            line = text.readline(MAX_LINE + 1)
            if not line:
                return
            number += 1
            if len(line) > MAX_LINE:
                raise _too_long(path, number)
            yield line


def read_text(path: Path | str, errors: str = "replace") -> str:
    """The whole file as text, under the same rules as ``lines``."""
    return "".join(lines(path, errors))
