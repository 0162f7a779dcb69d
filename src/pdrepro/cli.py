"""The ``pdrepro`` command line: runs the parsed subcommand and turns its errors into messages and exit codes."""

from __future__ import annotations

import sys

from .commands import EXIT_USER_ERROR, run_command

__all__ = ["EXIT_USER_ERROR", "main"]


def main(argv: list[str] | None = None) -> int:
    return run_command(argv)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
