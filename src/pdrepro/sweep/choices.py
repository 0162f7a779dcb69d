"""A sweep's choices and defaults as the command line declares them, without the sweep's models: building
`pdrepro sweep --help` (and `load`'s) imports only this; sweep.config holds the same names for the runner."""

from __future__ import annotations

from typing import Literal, get_args

FailurePolicy = Literal["continue", "stop"]
FAILURE_POLICIES: tuple[str, ...] = get_args(FailurePolicy)
DEFAULT_WAIT_S = 900.0
