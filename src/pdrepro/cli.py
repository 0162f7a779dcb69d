"""The ``pdrepro`` command line (the installed script's entry point): runs the parsed subcommand and turns its
errors into messages and exit codes. The work is pdrepro.commands' own ``main``; this module is the name the
script and the callers of the command line import."""

from __future__ import annotations

import sys

from .commands import EXIT_USER_ERROR, main

__all__ = ["EXIT_USER_ERROR", "main"]


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
