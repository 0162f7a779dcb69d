"""Mooncake told to use TCP only (MC_FORCE_TCP=1): one box, or a check of the stack without the fabric."""

from __future__ import annotations

from .mooncake import Mooncake

BACKEND = Mooncake(name="mooncake_tcp", label="Mooncake over TCP", plan_env={"MC_FORCE_TCP": "1"}, tcp_only=True)
