"""CLI subcommands: each module defines ``register(subparsers)``.

``build_parser`` discovers every module here, so adding a command does not touch any other
file; ``run_command`` runs the parsed command and turns its errors into exit codes (``pdrepro.cli``
is that, and `pdrepro repro` runs each stage through it, so nothing here imports the CLI above).
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

from .. import __version__
from ..core import console
from ..core.errors import UserError
from ..core.exits import EXIT_BAD_INPUT
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
