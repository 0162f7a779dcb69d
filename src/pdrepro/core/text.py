"""Text from a record or a tool's output made fit for one line of a message or a report: such text may hold
anything (a line break, a control or format character), and one of them would break the line it is shown in."""

from __future__ import annotations


def printable(text: str, mark: str = "?") -> str:
    """``text`` with every character that does not print as itself replaced by ``mark``."""
    return "".join(c if c.isprintable() else mark for c in text)
