"""The one place that decides how progress reaches the console.

Modules log through ``logging.getLogger(__name__)`` (all under ``pdrepro``); ``setup`` prints those
messages as bare lines on stdout, flushed, as the commands' ``print`` calls did before, so a sweep or a
stack start reads the same in a terminal, a SLURM log or a Kubernetes pod log. The handler writes to
whatever ``sys.stdout`` is at the time of each message, so a caller that swaps it (pytest's capsys, a
redirect) gets the lines.
"""

from __future__ import annotations

import logging
import sys

ROOT = "pdrepro"


class _Console(logging.StreamHandler):
    """A stream handler bound to the current sys.stdout, not to the one at its creation."""

    def __init__(self) -> None:
        super().__init__(sys.stdout)

    @property
    def stream(self):
        return sys.stdout

    @stream.setter
    def stream(self, _value) -> None:  # StreamHandler.__init__ assigns it; the current one is always used
        pass

    def emit(self, record: logging.LogRecord) -> None:
        super().emit(record)
        self.flush()

    def handleError(self, record: logging.LogRecord) -> None:
        # A closed standard output is the command line's to end quietly (pdrepro.cli), not a logging error
        # whose traceback lands on stderr.
        if isinstance(sys.exc_info()[1], BrokenPipeError):
            raise  # noqa: PLE0704 - re-raises the error being handled, as handleError is called inside except
        super().handleError(record)


def setup(level: int = logging.INFO) -> None:
    """Print the package's messages of LEVEL and above as plain lines on stdout; calling it again changes nothing."""
    logger = logging.getLogger(ROOT)
    logger.setLevel(level)
    if not any(isinstance(h, _Console) for h in logger.handlers):
        handler = _Console()
        handler.setFormatter(logging.Formatter("%(message)s"))
        logger.addHandler(handler)
