"""A run's files name no path of the machine that wrote them: every mention of the run folder's own path
becomes a path relative to the run, so a summary reads the same wherever the run is copied. Both the writer
of a run's results and the analysis that re-derives a summary to judge it need this, so it lives with the
run directory rather than with either of them."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def _roots(root: Path) -> list[str]:
    found = {str(root), str(root.absolute())}
    try:
        found.add(str(root.resolve()))
    except OSError:
        pass
    return sorted((r for r in found if r not in (".", "/")), key=len, reverse=True)


def _relative(text: str, roots: list[str]) -> str:
    for r in roots:
        text = text.replace(r + "/", "")
    return text


def portable(data: Any, root: Path) -> Any:
    """``data`` (a summary as summary.json holds it) with every mention of the run folder's own path made
    relative to the run: "/tmp/r2/provenance.json: ..." becomes "provenance.json: ..."."""
    roots = _roots(root)

    def walk(value: Any) -> Any:
        if isinstance(value, str):
            return _relative(value, roots)
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        return value

    return walk(data)
