"""The one way the bundle writes a file: never through a link planted where it writes, never over a
directory or a device, never half a file, never a temporary file left behind, and every failure one line
naming the path and its real cause (a full disk is a full disk, a read-only folder a read-only folder).

How: the bytes go to a fresh temporary name in the destination's own folder, created with O_EXCL (so a
link planted under any name is never opened: an existing name is an error, not a file to follow), are
synced, and are renamed over the destination. A rename replaces a link at the destination rather than
writing through it, and the destination is checked with lstat first, so a link there is refused by name
instead of silently replaced. A reader (or a crash) sees the old file or the whole new one.

``stage`` serves writers the bundle does not control (a library's ``save_pretrained``): they write into
a fresh private folder, whose regular files are then moved into place the same way.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from .errors import UserError


def unwritable(path: Path, exc: OSError, root: Path) -> UserError:
    """The one line for a file that cannot be written, by its real cause: a full disk is not fixed by chmod."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return UserError(f"{path}: cannot be written: the disk is full ({exc.strerror}); free space on the file "
                         f"system holding {root}, or write to another folder")
    if exc.errno in (errno.EISDIR, errno.ENOTEMPTY, errno.EEXIST) and path.is_dir():
        return UserError(f"{path}: is a directory where this file is written; move the directory away (or rename "
                         "it) and run the command again")
    if exc.errno == errno.EROFS:
        return UserError(f"{path}: cannot be written: {root} is on a read-only file system; copy the run (or give "
                         "an output folder) on a writable one")
    if exc.errno in (errno.ENOENT, errno.ENOTDIR):
        return UserError(f"{path}: cannot be written: its folder {path.parent} is missing or not a folder; create "
                         "it (or give another path)")
    if exc.errno == errno.ELOOP:
        return UserError(f"{path}: is a symlink; the bundle does not write through links it did not make: remove "
                         "the link or choose another folder")
    return UserError(f"{path}: cannot be written ({exc.strerror}); make {root} writable (e.g. chmod u+w), or write "
                     "to another folder")


def refusal(path: Path, what: str) -> UserError | None:
    """Why ``path`` is not a file ``what`` may replace, or None (nothing there, or a regular file)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return unwritable(Path(path), exc, Path(path).parent)
    if stat.S_ISLNK(st.st_mode):
        try:
            target = os.readlink(path)
        except OSError:
            target = "?"
        return UserError(f"{path}: is a symlink (to {target}); {what} does not write through links it did not "
                         "make: remove the link or choose another folder")
    if stat.S_ISDIR(st.st_mode):
        return UserError(f"{path}: is a directory where {what} writes a file; move it away or choose another folder")
    if not stat.S_ISREG(st.st_mode):
        return UserError(f"{path}: is not a regular file (a FIFO or device?); {what} will not write over it: "
                         "move it away or choose another folder")
    return None


def _remove(path: str | Path) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


@contextlib.contextmanager
def atomic(path: Path | str, what: str = "pdrepro", root: Path | None = None, mode: int = 0o644) -> Iterator[BinaryIO]:
    """A binary file to write ``path`` through (for streams too large to hold): it lands whole when the block
    ends without an exception, and nothing is left when it ends with one (KeyboardInterrupt included)."""
    path = Path(path)
    root = Path(root) if root is not None else path.parent
    problem = refusal(path, what)
    if problem is not None:
        raise problem
    tmp: str | None = None
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as handle:
            yield handle
            handle.flush()
            os.fchmod(handle.fileno(), mode)
            os.fsync(handle.fileno())  # the bytes are on disk before the name points at them
        # Checked again just before the rename: a link planted while the bytes were written is refused too.
        problem = refusal(path, what)
        if problem is not None:
            raise problem
        os.replace(tmp, path)
        tmp = None
    except OSError as exc:
        raise unwritable(path, exc, root) from None
    finally:
        if tmp is not None:
            _remove(tmp)


def write_file(path: Path | str, data: str | bytes, what: str = "pdrepro", root: Path | None = None,
               mode: int = 0o644) -> None:
    """``data`` (text is UTF-8) as the file ``path``, under the rules of the module text."""
    raw = data.encode() if isinstance(data, str) else data
    with atomic(path, what, root, mode) as handle:
        view = memoryview(raw)
        while view:
            view = view[handle.write(view):]


def make_folder(folder: Path, what: str) -> None:
    """``folder`` and its parents, or one line saying why not."""
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise UserError(f"{folder}: exists and is not a folder; {what} needs a folder there: give another path") from None
    except OSError as exc:
        raise unwritable(folder, exc, folder.parent) from None


@contextlib.contextmanager
def stage(folder: Path, what: str) -> Iterator[Path]:
    """A fresh private folder inside ``folder`` for writers the bundle does not control; on a clean exit its
    regular files are moved into ``folder`` (each refused as ``refusal`` says if the name holds something
    else), and the stage is removed however the block ends."""
    folder = Path(folder)
    try:
        staged = Path(tempfile.mkdtemp(dir=folder, prefix=".pdrepro-stage-"))
    except OSError as exc:
        raise unwritable(folder / ".pdrepro-stage", exc, folder) from None
    try:
        yield staged
        names = sorted(p.name for p in staged.iterdir())
        for name in names:
            if not stat.S_ISREG(os.lstat(staged / name).st_mode):
                raise UserError(f"{what} wrote {name} as something other than a file; nothing was moved into {folder}")
        for name in names:
            problem = refusal(folder / name, what)
            if problem is not None:
                raise problem
        for name in names:
            try:
                os.replace(staged / name, folder / name)
            except OSError as exc:
                raise unwritable(folder / name, exc, folder) from None
    except OSError as exc:
        raise unwritable(staged, exc, folder) from None
    finally:
        shutil.rmtree(staged, ignore_errors=True)


def nearest_existing(path: Path) -> Path:
    """``path`` itself, or its nearest parent that exists: where a file about to be made will live."""
    probe = Path(path).absolute()
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    return probe


def free_bytes(folder: Path) -> int | None:
    """Free bytes on the file system that holds ``folder`` (or its nearest existing parent); None if unknown."""
    try:
        return shutil.disk_usage(nearest_existing(folder)).free
    except OSError:
        return None


def open_log(path: Path | str, what: str = "pdrepro", append: bool = False) -> BinaryIO:
    """A log file a child process writes into as it runs (so not written whole and renamed): opened with
    O_NOFOLLOW, so a link planted at its name is refused, never followed; anything but a regular file there
    is refused as ``refusal`` says. The caller closes it."""
    path = Path(path)
    problem = refusal(path, what)
    if problem is not None:
        raise problem
    flags = os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW | (os.O_APPEND if append else os.O_TRUNC)
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as exc:
        raise unwritable(path, exc, path.parent) from None
    return os.fdopen(fd, "ab" if append else "wb")
