"""The ``pdrepro`` command line: runs the parsed subcommand and turns its errors into messages and exit codes."""

from __future__ import annotations

import sys

from .commands import build_parser
from .core import console
from .core.errors import UserError
from .sweep.signals import exit_status, signal_name

EXIT_USER_ERROR = 2


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_USER_ERROR
    console.setup()
    try:
        return int(args.func(args) or 0)
    except UserError as exc:
        print(f"pdrepro {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt as exc:
        # A signal a command turned into an interrupt (sweep.signals) exits as the signal would: 143 for SIGTERM.
        print(f"pdrepro {args.command}: interrupted ({signal_name(exc)}); results written so far are kept.",
              file=sys.stderr)
        return exit_status(exc)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
