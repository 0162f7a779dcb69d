"""One `stack up` (or `stack down`) at a time per run folder: an exclusive flock on the folder itself,
so no lock file is left in the run, and a process that dies lets go of it with its last descriptor."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from ...core.errors import UserError


@contextlib.contextmanager
def held(folder: Path, verb: str) -> Iterator[None]:
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise UserError(f"{folder}: cannot open the run folder ({exc.strerror}); give the folder "
                        "`pdrepro stack up --out RUN` wrote") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise UserError(f"{folder}: another `pdrepro stack up` or `stack down` is working in this folder now; "
                            f"wait until it has returned, then run `pdrepro stack {verb}` again") from None
        yield
    finally:
        os.close(fd)
