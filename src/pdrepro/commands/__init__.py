"""CLI subcommands: each module defines ``register(subparsers)``.

``build_parser`` discovers every module here, so adding a command does not touch any other
file; ``run_command`` runs the parsed command and turns its errors into exit codes (`pdrepro repro`
runs each stage through it), and ``main`` adds the closed standard output's quiet end. ``main`` lives
here, not in a module above, so both doors into the command line (``pdrepro.cli``, the installed
script, and ``python -m pdrepro``) stand on one floor right above the commands they open.

Every command line builds every command's parser (`pdrepro --help` and any command alike), so a command module
imports at its top only what declaring its options needs: argparse, core's errors and exits, the shared option
declarations (another command module's ``add_*_options``), constants and the light name modules its choices come
from (backends, engines, launch.site, launch.targets.names, launch.stack.kinds, sweep.choices,
scenario.schemanames). What it needs only to run (pydantic models, YAML, the analysis, plots, HTTP, tables) it
imports inside its run function, or the helper that uses it, with ``if TYPE_CHECKING:`` imports for annotations.
tests/commands/test_cli_light.py names any heavy module building the parser pulls in; `make bench-help` prints the
CPU time of each command's --help.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys

from .. import __version__
from ..core import console
from ..core.errors import UserError
from ..core.exits import EXIT_BAD_INPUT, EXIT_CLOSED_OUTPUT
from ..core.signals import exit_status, signal_name

EXIT_USER_ERROR = EXIT_BAD_INPUT


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pdrepro",
        description="Reproduce the Mooncake x SGLang PD-disaggregation benchmark.",
    )
    parser.add_argument("--version", action="version", version=f"pdrepro {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        module.register(sub)
    return parser


def run_command(argv: list[str] | None = None) -> int:
    """Parse ``argv``, run its command and turn its errors into messages and exit codes."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_USER_ERROR
    return run_guarded(args.command, args.func, args)


def run_guarded(command: str, func, args) -> int:
    """``func(args)`` (a command's run, ``args`` its parsed command line or a typed request) with its errors turned
    into messages and exit codes: a runner's stage runs so, as the CLI runs the command."""
    console.setup()
    try:
        return int(func(args) or 0)
    except UserError as exc:
        print(f"pdrepro {command}: error: {exc}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt as exc:
        # A signal a command turned into an interrupt (core.signals) exits as the signal would: 143 for SIGTERM.
        print(f"pdrepro {command}: interrupted ({signal_name(exc)}); results written so far are kept.",
              file=sys.stderr)
        return exit_status(exc)


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
