"""Which of a scenario's stacks a host launch starts, named without the record's models: `stack up --stack` and
`compare` declare their choices from here, so building the command line imports no pydantic (launch.stack.record
keeps the same names for what it records)."""

from __future__ import annotations

from typing import Literal, get_args

StackKind = Literal["disaggregated", "regular"]
STACK_KINDS: tuple[str, ...] = get_args(StackKind)
