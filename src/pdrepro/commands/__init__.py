"""CLI subcommands: each module defines ``register(subparsers)``.

``build_parser`` discovers every module here, so adding a command does not touch any other
file; ``pdrepro.cli`` runs the parsed command and turns its errors into exit codes.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil

from .. import __version__


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
