"""Backends by name: the scenario's launch.transfer_backend picks one."""

from __future__ import annotations

from ..core.errors import UserError
from . import mooncake, mooncake_tcp, nixl
from .base import TransferBackend

BACKENDS: dict[str, TransferBackend] = {b.name: b for b in (mooncake.BACKEND, mooncake_tcp.BACKEND, nixl.BACKEND)}


def names() -> tuple[str, ...]:
    return tuple(BACKENDS)


def backend(name: str) -> TransferBackend:
    try:
        return BACKENDS[name]
    except KeyError:
        raise UserError(f"transfer backend {name!r} is not one the bundle knows; use one of: "
                        f"{', '.join(BACKENDS)}") from None
