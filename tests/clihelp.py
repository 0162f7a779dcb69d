"""Runs the ``pdrepro`` CLI for the CLI tests: in-process (fast), or as a subprocess like a user."""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
from dataclasses import dataclass

from pdrepro.cli import main


@dataclass
class Result:
    rc: int
    out: str
    err: str


def pdrepro(*args) -> Result:
    """``main()`` with captured output; an uncaught exception fails the test, as a traceback would."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main([str(a) for a in args])
    return Result(rc, out.getvalue(), err.getvalue())


def pdrepro_process(*args) -> Result:
    proc = subprocess.run([sys.executable, "-m", "pdrepro", *map(str, args)], capture_output=True, text=True,
                          timeout=300)
    return Result(proc.returncode, proc.stdout, proc.stderr)


def assert_one_line_error(result: Result, command: str, *needles: str) -> str:
    """Exit 2, no traceback, and exactly one ``pdrepro CMD: error:`` line naming each needle."""
    assert result.rc == 2, (result.rc, result.out, result.err)
    assert "Traceback" not in result.err + result.out
    errors = [l for l in result.err.splitlines() if l.startswith(f"pdrepro {command}: error:")]
    assert len(errors) == 1, result.err
    for needle in needles:
        assert needle in errors[0], (needle, errors[0])
    return errors[0]
