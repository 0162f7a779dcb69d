"""The real one-GPU run under tests/recorded/h200-onebox-sglang-0.5.15.post1/ (see its SOURCE), shared by the
tests that judge it, analyse it and read its engine ceiling and its provenance."""

from __future__ import annotations

import shutil
from pathlib import Path

RECORDED = Path(__file__).resolve().parent / "recorded" / "h200-onebox-sglang-0.5.15.post1"


def copy_run(tmp_path: Path, source: Path = RECORDED) -> Path:
    """A writable copy of a recorded run (``source``, by default the hand-started one): the recorded files are
    read-only in the tree, and a test may change or analyse its copy."""
    dest = tmp_path / "run"
    shutil.copytree(source, dest)
    for p in dest.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    return dest
