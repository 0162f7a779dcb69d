"""Starting the Mooncake Transfer Engine where the bundle drives it itself (the
smoke's agents, gpu-check's sides): one environment rule, one start."""

from __future__ import annotations

from collections.abc import MutableMapping

from ..core.errors import UserError


def set_transport_env(env: MutableMapping[str, str], transport: str) -> None:
    """The environment for TRANSPORT (auto | tcp | rdma). The engine's protocol
    argument does not pick the transport; only MC_FORCE_TCP forces TCP."""
    if transport == "tcp":
        env["MC_FORCE_TCP"] = "1"
    elif transport == "rdma":
        env.pop("MC_FORCE_TCP", None)
    # Without the pool, batches over TCP open a connection per slice.
    env.setdefault("MC_TCP_ENABLE_CONNECTION_POOL", "1")
    # The transport is read from the engine's INFO lines; a quieter level hides it.
    env["MC_LOG_LEVEL"] = "INFO"


def start(host: str, protocol: str, where: str):
    """An initialised engine in P2P handshake mode; WHERE says where it can be imported."""
    try:
        from mooncake.engine import TransferEngine
    except ImportError as exc:
        raise UserError(f"the Mooncake Transfer Engine is not importable here ({exc}); {where}") from None
    engine = TransferEngine()
    if engine.initialize(host, "P2PHANDSHAKE", protocol, "") != 0:
        raise UserError("the Mooncake Transfer Engine failed to initialise; see its log lines above")
    return engine
