"""Engines by name: the scenario's launch.engine picks one."""

from __future__ import annotations

from ..core.errors import UserError
from . import sglang
from .base import ServingEngine

ENGINES: dict[str, ServingEngine] = {e.name: e for e in (sglang.ENGINE,)}


def names() -> tuple[str, ...]:
    return tuple(ENGINES)


def engine(name: str) -> ServingEngine:
    try:
        return ENGINES[name]
    except KeyError:
        raise UserError(f"serving engine {name!r} is not one the bundle knows; use one of: {', '.join(ENGINES)}") from None
