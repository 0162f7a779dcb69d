"""The ``pdrepro`` command line: runs the parsed subcommand and turns its errors into messages and exit codes."""

from __future__ import annotations

import os
import sys

from .commands import EXIT_USER_ERROR, run_command
from .core.exits import EXIT_CLOSED_OUTPUT

__all__ = ["EXIT_USER_ERROR", "main"]


def _quiet_stdout() -> None:
    """Point standard output at /dev/null, so the interpreter's own flush at exit meets no closed pipe (it
    would print "Exception ignored ... BrokenPipeError" on stderr after the command ended quietly)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # no file descriptor behind sys.stdout (a test's capture)
        pass


def main(argv: list[str] | None = None) -> int:
    """Run the command; a reader that closed our standard output (``pdrepro knobs | head -1``) ends it quietly
    with the status a shell gives a command SIGPIPE stopped, once here for every command: the reader took what
    it wanted, so there is nothing to say and nowhere to say it."""
    try:
        status = run_command(argv)
        sys.stdout.flush()  # what is still buffered meets the closed pipe here, not in the interpreter's exit
        return status
    except BrokenPipeError:
        _quiet_stdout()
        return EXIT_CLOSED_OUTPUT


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
