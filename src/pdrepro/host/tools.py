"""Running the host's own tools (nvidia-smi, git, ib_write_bw, ...) found on PATH, with a timeout.

``capture`` is the one place a host tool is run to completion: a tool not on PATH is ``ToolMissing`` and one
that does not finish in time is ``ToolTimeout``, so each caller words those in its own terms. ``run_tool``
adds the usual rule that a non-zero exit is a failure whose message carries the tool's last lines.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass


class ToolMissing(Exception):
    """The executable is not on PATH."""

    @property
    def name(self) -> str:
        return str(self.args[0])


class ToolFailed(Exception):
    """The executable ran and failed; the message carries its stderr."""


class ToolTimeout(ToolFailed):
    """The executable did not finish within its timeout (it was killed); ``output`` is what it had printed."""

    def __init__(self, message: str, output: str = "") -> None:
        super().__init__(message)
        self.output = output


def _text(part: bytes | str | None) -> str:
    return part.decode(errors="replace") if isinstance(part, bytes) else (part or "")


@dataclass(frozen=True)
class Finished:
    """A tool that ran to its end: exit status and both streams as text."""

    returncode: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        """Both streams, stripped, as a person reads them."""
        return (self.stdout + self.stderr).strip()


def capture(argv: list[str], timeout: float | None, env: Mapping[str, str] | None = None) -> Finished:
    """Run ARGV to its end and keep its output; ToolMissing / ToolTimeout when it cannot.

    A timeout of None waits as long as the tool runs (compose up, which has its own waits)."""
    exe = shutil.which(argv[0])
    if exe is None:
        raise ToolMissing(argv[0])
    try:
        proc = subprocess.run([exe, *argv[1:]], capture_output=True, text=True, timeout=timeout,
                              env=None if env is None else dict(env))
    except subprocess.TimeoutExpired as exc:
        raise ToolTimeout(f"{' '.join(argv)} did not finish within {timeout:.0f} s",
                          _text(exc.stdout) + _text(exc.stderr)) from None
    return Finished(proc.returncode, proc.stdout or "", proc.stderr or "")


def run_tool(argv: list[str], timeout: float = 30) -> str:
    """ARGV's stdout; ToolMissing, or ToolFailed naming the exit status and the last lines it printed."""
    done = capture(argv, timeout)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise ToolFailed(f"{' '.join(argv)} exited {done.returncode}: {' / '.join(tail) or 'no output'}")
    return done.stdout
