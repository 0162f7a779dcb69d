"""Running the host's own tools (nvidia-smi, ib_write_bw, ...) found on PATH."""

from __future__ import annotations

import shutil
import subprocess


class ToolMissing(Exception):
    """The executable is not on PATH."""


class ToolFailed(Exception):
    """The executable ran and failed; the message carries its stderr."""


def run_tool(argv: list[str], timeout: float = 30) -> str:
    exe = shutil.which(argv[0])
    if exe is None:
        raise ToolMissing(argv[0])
    try:
        proc = subprocess.run([exe, *argv[1:]], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise ToolFailed(f"{' '.join(argv)} did not finish within {timeout:.0f} s") from None
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise ToolFailed(f"{' '.join(argv)} exited {proc.returncode}: {' / '.join(tail) or 'no output'}")
    return proc.stdout
