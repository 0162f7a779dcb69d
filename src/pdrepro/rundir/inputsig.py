"""What counts as an input of a run's analysis, and its signature: a stored summary is stale once an input was
added, changed or deleted since it was made. The analysis's own outputs, writes in progress, plots and the
part of stack.json that changes when the servers stop are not inputs."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from ..core import runfile
from ..core.errors import UserError

# What the host launcher (`pdrepro stack up`) records of the processes it started: rewritten when they
# stop, so the file as a whole is not an input; the analysis reads only which boot of the host started
# which roles (the proof that a server ran on the sweep's host), and that part is (``_stack_identity``).
STACK_FILE = "stack.json"

# What analysis and the gates write into a run, with the temporary names of their writes
# (older releases used the first two styles): not inputs.
_OUTPUTS = ("summary.json", "report.md", "summary.csv", "summary.json.tmp", ".summary.json.tmp", ".report.md.tmp",
            ".summary.csv.tmp", "junit.xml", ".sweep.lock")


# The nodes' records (RUN/nodes/<role>.json, rundir.noderecord): read by `diagnose` and the pair check, never by the
# analysis. A one-box `stack up` writes them again each time it starts in the folder, which must not make the
# summary an earlier analysis stored look made from other inputs.
_NOT_INPUT_FOLDERS = ("nodes",)


def _is_temporary(name: str) -> bool:
    """A write in progress (or one a SIGKILL cut short) of the safe writer (core.safewrite): a dot, the
    file's name, a random part and ``.tmp``."""
    return name.startswith(".") and name.endswith(".tmp")


def _stack_identity(path: Path) -> bytes:
    """The part of stack.json the analysis reads: its boot id and the roles it started (the raw text where the
    file is no such record, which the analysis refuses)."""
    try:
        text = runfile.read_text(path, kind=runfile.RECORD)
    except (OSError, UserError):
        return b"unreadable"
    try:
        data = json.loads(text)
        procs = data.get("processes") if isinstance(data, dict) else None
        roles = sorted(str(p.get("role")) for p in procs) if isinstance(procs, list) and all(
            isinstance(p, dict) for p in procs) else None
        return json.dumps([data.get("boot_id"), roles]).encode() if isinstance(data, dict) else text.encode()
    except ValueError:
        return text.encode()


def signature(root: Path, plots_dir: Path) -> str:
    """Names, sizes and mtimes of every input file under ``root`` (comparison runs nest folders): an input
    added, changed or deleted since the analysis changes it."""
    digest = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if (p.name in _OUTPUTS or _is_temporary(p.name) or p == root / STACK_FILE or plots_dir in p.parents
                or p.parent.name in _NOT_INPUT_FOLDERS or not p.is_file()):
            continue
        st = p.stat()
        digest.update(f"{p.relative_to(root)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    stack = root / STACK_FILE
    if stack.is_file():
        digest.update(b"stack.json\0" + _stack_identity(stack) + b"\n")
    return digest.hexdigest()
