"""``pdrepro schema``: the JSON Schema of a scenario file or of summary.json."""

from __future__ import annotations

from pathlib import Path

from ..core.errors import UserError
from ..scenario.schemanames import SCHEMA_NAMES


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "schema", help="print the JSON Schema of scenario files or summary.json (for editors and tools)",
        description="Print the JSON Schema generated from the scenario or summary model, or write both "
                    "(scenario.schema.json, summary.schema.json) into a folder with --write.")
    p.add_argument("which", nargs="?", choices=SCHEMA_NAMES, help="the schema to print")
    p.add_argument("--write", type=Path, metavar="DIR", help="write every schema into DIR instead of printing one")
    p.set_defaults(func=run)


def run(args) -> int:
    # The models the schemas come from (pydantic) load when the command runs, not for its --help.
    from ..scenario.schemagen import render, write_all

    if args.write is not None:
        if args.write.exists() and not args.write.is_dir():
            raise UserError(f"--write {args.write}: is a file; give a folder")
        for path in write_all(args.write):
            print(path)
        return 0
    if args.which is None:
        raise UserError(f"name the schema to print ({' or '.join(SCHEMA_NAMES)}), or pass --write DIR")
    print(render(args.which), end="")
    return 0
