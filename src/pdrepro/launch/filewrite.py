"""Writing a file the bundle owns into a folder it does not (a deploy folder): the shared safe writer
(pdrepro.core.safewrite), with the signature the launch targets have always called."""

from __future__ import annotations

from pathlib import Path

from ..core import safewrite
from ..core.safewrite import refusal

__all__ = ["refusal", "write_file"]


def write_file(path: Path, data: str | bytes, option: str, mode: int = 0o644) -> None:
    """``data`` as the file ``path``; ``option`` names what chose the folder (it is in every refusal)."""
    safewrite.write_file(path, data, option, None, mode)
