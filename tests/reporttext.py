"""Reading a markdown report as a person sees it: its pipe tables, each as (header, rows)."""

from __future__ import annotations


def tables(report: str) -> list[tuple[list[str], list[list[str]]]]:
    """Every table of ``report``: its header cells and its rows' cells (the separator line left out)."""
    found, block = [], []
    for line in report.splitlines() + [""]:
        if line.startswith("|"):
            block.append([c.strip() for c in line.strip().strip("|").split("|")])
        elif block:
            found.append((block[0], block[2:]))
            block = []
    return found
