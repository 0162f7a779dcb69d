"""Where in a server log a line stands: the causes cite evidence by file and line number. The transport's lines
are picked by the backend's own reader (parsers/); here they are only found again in the file, streamed (a log
may be hundreds of MB), so the number cited is the line's own."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from ...core import runfile

# Lines cited per file: the evidence is a few lines, not the log.
MAX_CITED = 4


def numbered(path: Path, wanted: Iterable[str]) -> list[tuple[int, str]]:
    """(line number, line) of the last occurrences of each of ``wanted`` (compared stripped) in ``path``, in file
    order, at most MAX_CITED; empty where the file cannot be read."""
    texts = {w.strip() for w in wanted if w.strip()}
    if not texts:
        return []
    last: dict[str, int] = {}
    try:
        for number, line in enumerate(runfile.lines(path), start=1):
            text = line.strip()
            if text in texts:
                last[text] = number
    except (OSError, ValueError):
        return []
    return sorted((n, t) for t, n in last.items())[-MAX_CITED:]


def matching(path: Path, pattern: re.Pattern[str]) -> list[tuple[int, str, re.Match[str]]]:
    """(line number, line, match) of the last MAX_CITED lines of ``path`` that ``pattern`` matches."""
    found: list[tuple[int, str, re.Match[str]]] = []
    try:
        for number, line in enumerate(runfile.lines(path), start=1):
            m = pattern.search(line)
            if m:
                found.append((number, line.strip(), m))
                del found[:-MAX_CITED]
    except (OSError, ValueError):
        return []
    return found
