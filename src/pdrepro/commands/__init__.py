"""CLI subcommands: each module defines ``register(subparsers)``.

A module here is discovered by ``pdrepro.cli``; adding a command does not
touch any other file.
"""
