"""Argument types the subcommands share, so a bad value stops at the command line."""

from __future__ import annotations

import argparse
import math

from .errors import UserError


def seconds(text: str) -> float:
    """A duration in seconds above 0 (argparse ``type=``); a negative or zero timeout means nothing."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text} is not a number of seconds above 0")
    return value


def prompt_lens(text: str, option: str = "--prompt-lens") -> tuple[int, ...]:
    """Comma-separated prompt lengths in tokens, each >= 1. A UserError rather than an argparse type, so
    ``main()`` reports it as one line and returns 2 instead of exiting."""
    try:
        values = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise UserError(f"{option} {text!r}: give comma-separated token counts, e.g. 128,4096,32768") from None
    if not values or min(values) < 1:
        raise UserError(f"{option} {text!r}: give comma-separated token counts >= 1, e.g. 128,4096,32768")
    return values
