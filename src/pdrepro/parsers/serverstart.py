"""Where an SGLang server's latest start begins in its log: a server appends to its log file across
restarts, and each start prints its ServerArgs first. The sweep copies only the latest start's part;
the analysis reads the engine's transport from it."""

from __future__ import annotations

import re

START_MARKER = "server_args=ServerArgs("
# The role a start gives the server: prefill, decode, or 'null' for a regular server.
_MODE = re.compile(r"[(,]\s*disaggregation_mode=['\"]?(\w+)")


def start_mode(line: str) -> str | None:
    """The disaggregation mode a start-up line (one holding START_MARKER) gives its server, or None."""
    found = _MODE.search(line)
    return found.group(1) if found else None


def current_start(text: str) -> str:
    """The part of an appended log written by the server's latest start."""
    cut = text.rfind(START_MARKER)
    if cut < 0:
        return text
    return text[text.rfind("\n", 0, cut) + 1:]
