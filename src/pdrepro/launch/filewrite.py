"""Writing a file the bundle owns into a folder it does not: never through a symlink planted there, never
over a directory or a device, and every failure one line naming the path and its real cause (a full disk
is a full disk, a read-only folder a read-only folder).

The bytes go to a fresh temporary name in the same folder (O_EXCL: nothing planted there is opened),
are synced, then renamed over the destination, so a reader sees the old file or the whole new one.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

from ..core.errors import UserError
from ..rundir.contract import unwritable


def refusal(path: Path, option: str) -> UserError | None:
    """Why ``path`` is not a file this command may replace, or None (absent, or a regular file)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(st.st_mode):
        return UserError(f"{path}: is a symlink (to {os.readlink(path)}); {option} does not write through links "
                         "it did not make: remove the link or choose another folder")
    if stat.S_ISDIR(st.st_mode):
        return UserError(f"{path}: is a directory where {option} writes a file; move it away or choose another folder")
    if not stat.S_ISREG(st.st_mode):
        return UserError(f"{path}: is not a regular file (a FIFO or device?); {option} will not write over it: "
                         "move it away or choose another folder")
    return None


def write_file(path: Path, data: str | bytes, option: str, mode: int = 0o644) -> None:
    """``data`` as the file ``path`` (see the module text); ``option`` names what chose the folder."""
    path = Path(path)
    problem = refusal(path, option)
    if problem is not None:
        raise problem
    raw = data.encode() if isinstance(data, str) else data
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            view = memoryview(raw)
            while view:
                view = view[os.write(fd, view):]
            os.fchmod(fd, mode)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
        tmp = None
    except OSError as exc:
        raise unwritable(path, exc, path.parent) from None
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
