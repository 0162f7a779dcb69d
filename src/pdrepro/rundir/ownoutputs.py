"""A runner's own outputs (an A/B's ab-summary.json and report.md, a tune's summary, report and overlay, a
comparison's or a load sweep's summary and report): written once, when the runner finishes, and never over a
file the bundle did not write.

How a runner knows a file is its own: RUN/outputs-written.json (``LEDGER``) holds, for each output a runner wrote
into RUN, the sha256 of the bytes it wrote. An output may be written where nothing is, or where the file still
holds exactly the bytes the ledger names (a resumed run, a finished one run again), or the very bytes about to
be written. Anything else there (a person's edited report, a file copied in by hand, one written before the
ledger existed, a link, a folder) is refused on one line naming it and the fix, before any output is written;
the runners ask ``refuse_foreign`` before they measure, so no GPU time is spent on a run that could not end.
A content digest rather than a stamp inside the file: an edit keeps a stamp, it does not keep the digest.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path
from typing import Annotated

from pydantic import Field

from ..core import runfile
from ..core.errors import UserError
from ..core.safewrite import refusal, write_file
from ..core.strictmodel import Record
from .statefile import read_state, write_state

LEDGER = "outputs-written.json"
SHA256 = r"^[0-9a-f]{64}$"
# An output's name inside the run: relative, no part that starts with a dot (plots/load.png is one).
NAME = r"^[A-Za-z0-9_-][A-Za-z0-9._-]*(/[A-Za-z0-9_-][A-Za-z0-9._-]*)*$"


class OutputsLedger(Record):
    """What the bundle's runners wrote into a run: each output by its name in the run and its bytes' sha256."""

    files: dict[Annotated[str, Field(pattern=NAME)], Annotated[str, Field(pattern=SHA256)]] = Field(
        default_factory=dict, description="output name (relative to the run) -> sha256 of the bytes written")


def path(run: Path) -> Path:
    return Path(run) / LEDGER


def _ledger(run: Path) -> OutputsLedger:
    return read_state(path(run), OutputsLedger, "record of the outputs pdrepro wrote") or OutputsLedger()


def _digest(p: Path) -> str | None:
    """The sha256 of the regular file ``p``; None when nothing is there. Anything but a regular file is refused
    (``refusal``), and the file is opened without following a link planted meanwhile."""
    try:
        st = os.lstat(p)
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return "not a file"
    return runfile.sha256(p) or "unreadable"


def _refuse(p: Path, command: str) -> UserError:
    return UserError(f"{p}: not written by pdrepro {command} (edited since, or put there another way); {command} "
                     "writes its outputs when it finishes and never over a file it did not write: move that file "
                     "aside (or delete it) and run the command again")


def refuse_foreign(run: Path, names: tuple[str, ...], command: str,
                   planned: dict[str, bytes] | None = None) -> None:
    """Refuse (one line, exit 2) the first of ``names`` in ``run`` that is there and not the bundle's own: not
    the bytes the ledger names, nor (``planned``) the bytes about to be written."""
    run = Path(run)
    known = _ledger(run).files
    for name in names:
        target = run / name
        refused = refusal(target, f"pdrepro {command}")
        if refused is not None:
            raise refused
        found = _digest(target)
        if found is None or found == known.get(name):
            continue
        if planned is not None and name in planned and found == hashlib.sha256(planned[name]).hexdigest():
            continue
        raise _refuse(target, command)


def _remember(run: Path, digests: dict[str, str]) -> None:
    ledger = _ledger(run)
    write_state(path(run), OutputsLedger(files={**ledger.files, **digests}), "pdrepro", run)


def write_outputs(run: Path, texts: dict[str, str | bytes], command: str) -> None:
    """Every one of ``texts`` (name in ``run`` -> content) written, or none: each is checked first."""
    run = Path(run)
    raw = {name: t.encode() if isinstance(t, str) else t for name, t in texts.items()}
    refuse_foreign(run, tuple(raw), command, raw)
    for name, data in raw.items():
        write_file(run / name, data, f"pdrepro {command}", run)
    _remember(run, {name: hashlib.sha256(data).hexdigest() for name, data in raw.items()})


def remember(run: Path, names: tuple[str, ...]) -> None:
    """The outputs another stage of the runner just wrote (``pdrepro analyze`` for a comparison, the load
    writer), taken as the runner's own: their digests go into the ledger."""
    run = Path(run)
    found = {name: _digest(run / name) for name in names}
    _remember(run, {name: d for name, d in found.items() if d is not None and len(d) == 64})
