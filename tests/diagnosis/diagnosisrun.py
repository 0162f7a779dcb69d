"""Helpers of the diagnose tests: a run copied read-only (diagnosing writes nothing, and a read-only copy proves
it), the command run in-process with its JSON read back as the model, and each cited log line held against the
file it names."""

from __future__ import annotations

import json
import os
import shutil
from contextlib import contextmanager
from pathlib import Path

from clihelp import pdrepro
from runkinds import tree_hash

from pdrepro.rundir.diagnosismodel import Diagnosis


def _chmod_tree(root: Path, writable: bool) -> None:
    for p in [root, *root.rglob("*")]:
        if p.is_symlink():
            continue
        if p.is_dir():
            p.chmod(0o755 if writable else 0o555)
        else:
            p.chmod(0o644 if writable else 0o444)


@contextmanager
def read_only(source: Path, dest: Path):
    """A read-only copy of the run at ``source``; writable again afterwards, so the test's folder can go."""
    shutil.copytree(source, dest, symlinks=True)
    _chmod_tree(dest, writable=False)
    try:
        yield dest
    finally:
        _chmod_tree(dest, writable=True)


def diagnose_json(run: Path, *args: str) -> Diagnosis:
    """`pdrepro diagnose RUN --json` in-process: exit 0, its output the model, nothing in RUN changed."""
    before = tree_hash(run)
    result = pdrepro("diagnose", run, "--json", *args)
    assert result.rc == 0, result.err[-3000:]
    assert tree_hash(run) == before  # diagnosing writes nothing into the run
    return Diagnosis.model_validate(json.loads(result.out))


def cited_lines_exist(run: Path, d: Diagnosis) -> int:
    """Every log line a cause cites stands in its file at its number; the count checked."""
    checked = 0
    for cause in d.causes:
        for e in cause.evidence:
            if e.kind != "log line" or e.line is None:
                continue
            lines = (run / e.file).read_text(errors="replace").splitlines()
            assert 1 <= e.line <= len(lines), (e.file, e.line)
            assert lines[e.line - 1].strip() == e.text.strip() or lines[e.line - 1].strip().startswith(e.text), e
            checked += 1
    return checked


def names(entries) -> list[str]:
    return [e.name for e in entries]


def is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0
