"""Argument types the subcommands share, so a bad value stops at the command line."""

from __future__ import annotations

import argparse
import math


def seconds(text: str) -> float:
    """A duration in seconds above 0 (argparse ``type=``); a negative or zero timeout means nothing."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text} is not a number of seconds above 0")
    return value
