"""``pdrepro docs``: the generated reference pages (commands, scenario file, summary.json)."""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path

from ..core.errors import UserError
from ..core.safewrite import write_file
from ..scenario.schemanames import SCHEMA_NAMES

# The command reference, and a page per shipped schema (docgen.SCHEMA_PAGES names each one's file after its schema).
PAGES = ("cli", *SCHEMA_NAMES)


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "docs", help="print or write the reference pages generated from the command line and the schemas",
        description="Render docs/reference: cli.md from the command line's own parser, a page per file "
                    "format (scenario.md, summary.md, ...) from its JSON Schema. `make docs` writes them into docs/reference.")
    p.add_argument("which", nargs="?", choices=PAGES, help="the page to print")
    p.add_argument("--write", type=Path, metavar="DIR", help="write every page into DIR instead of printing one")
    p.set_defaults(func=run)


@contextmanager
def _bare_environment():
    """Some options default to an environment variable; the reference states their defaults without one."""
    saved = dict(os.environ)
    os.environ.clear()
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def reference_pages() -> dict[str, str]:
    """File name -> text of each page, as `make docs` writes them."""
    from ..docgen import render_pages
    from . import build_parser

    # Built once as usual first, so every command module is imported with the real environment: a module
    # that reads one at import must not keep the bare environment's value for the rest of the process.
    build_parser()
    with _bare_environment():
        parser = build_parser()
    return render_pages(parser)


def run(args) -> int:
    pages = reference_pages()
    if args.write is not None:
        if args.write.exists() and not args.write.is_dir():
            raise UserError(f"--write {args.write}: is a file; give a folder")
        args.write.mkdir(parents=True, exist_ok=True)
        for name, text in pages.items():
            write_file(args.write / name, text, "docs --write")
            print(args.write / name)
        return 0
    if args.which is None:
        raise UserError(f"name the page to print ({', '.join(PAGES)}), or pass --write DIR")
    print(pages[f"{args.which}.md"], end="")
    return 0
