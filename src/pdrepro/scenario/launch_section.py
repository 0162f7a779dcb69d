"""A scenario's launch section: how servers and router start, as the published launch fixes it.

Stacks, ports, router policy, server flags and the environment the compose
files hand to the servers. Where the servers run (IPs, GPUs, paths) is the
site's business (``siteinput``, ``pdrepro render``'s options), not this file's.
"""

from __future__ import annotations

import math
from typing import Annotated, Literal, NamedTuple, get_args

from pydantic import Field

from ..core.errors import UserError
from ..core.strictmodel import Flag, IntBounds, NumberBounds, Record
from . import launch_env, serverflags

PORT = Annotated[int, IntBounds(1, 65535)]

# Each Literal is the field's type; the tuple of its values derives from it.
Stack = Literal["disaggregated", "regular"]
STACKS: tuple[str, ...] = get_args(Stack)
Engine = Literal["sglang"]
TransferBackendName = Literal["mooncake", "mooncake_tcp", "nixl"]
RouterPolicy = Literal["round_robin", "random", "cache_aware", "power_of_two"]
ROUTER_POLICIES: tuple[str, ...] = get_args(RouterPolicy)


class PdPorts(NamedTuple):
    """The disaggregated stack's first ports (server k of a node adds k)."""

    prefill: int
    decode: int
    bootstrap: int


class LaunchPorts(Record):
    router: PORT
    prefill: PORT | None = None
    decode: PORT | None = None
    bootstrap: PORT | None = None
    # The two regular (non-disaggregated) instances of the comparison stack.
    regular: tuple[PORT, ...] = ()

    def pd(self) -> PdPorts:
        """The disaggregated stack's ports, which Launch.check has required for that stack."""
        if self.prefill is None or self.decode is None or self.bootstrap is None:
            raise UserError("launch.ports: the disaggregated stack needs prefill, decode and bootstrap ports")
        return PdPorts(self.prefill, self.decode, self.bootstrap)


class Launch(Record):
    """How servers and router start: what the published launch fixes.

    Where the servers run (IPs, GPUs, paths) is the site's business and comes
    from ``pdrepro render``'s options, not from here.
    """

    stacks: tuple[Stack, ...]
    ports: LaunchPorts
    router_policy: RouterPolicy
    chunked_prefill_size: Annotated[int, IntBounds(-1)]
    stream_interval: Annotated[int, IntBounds(1)]
    disable_radix_cache: Flag
    trust_remote_code: Flag
    enable_request_time_stats_logging: Flag
    # The serving engine and the KV transfer backend, each a module picked from its registry (engines,
    # backends); tests/scenario holds these Literals equal to the registries' names.
    engine: Engine = "sglang"
    transfer_backend: TransferBackendName = "mooncake"
    enable_metrics: Flag = False
    # TP of each regular instance; unset means parallel.prefill_tp.
    regular_tp: Annotated[int, IntBounds(1, 64)] | None = None
    extra_server_args: tuple[str, ...] = ()
    # Each server's --mem-fraction-static when servers share one GPU (a box with one GPU):
    # a fraction of the memory free when that server starts. Unset: such a box needs --mem-fraction.
    shared_gpu_mem_fraction: Annotated[float, NumberBounds(0.01, 0.95)] | None = None
    env: dict[str, str] = Field(default_factory=dict, description=(
        "variables every server gets: the knobs `pdrepro knobs` lists (generated from the pinned SGLang's and "
        "Mooncake's source; a name under a listed prefix that the list lacks is refused), any name under a "
        "prefix without a list (UCX_*, NIXL_*, other SGLANG_*), the backend's required ones; not those the "
        "launch plan sets (--gpus, --transfer-backend, --prefill-ip/--decode-ip)"))

    def check(self, source: str) -> None:
        if not self.stacks or len(set(self.stacks)) != len(self.stacks):
            raise UserError(f"{source}: launch.stacks must list {' and/or '.join(STACKS)} once each")
        p = self.ports
        if "disaggregated" in self.stacks:
            missing = [k for k in ("prefill", "decode", "bootstrap") if getattr(p, k) is None]
            if missing:
                raise UserError(f"{source}: launch.ports.{missing[0]} is missing; "
                                "the disaggregated stack needs prefill, decode and bootstrap ports")
            if len({p.prefill, p.decode, p.bootstrap, p.router}) != 4:
                raise UserError(f"{source}: launch.ports prefill, decode, bootstrap and router must differ "
                                "(they may share one host)")
        if "regular" in self.stacks and (len(p.regular) != 2 or len({*p.regular, p.router}) != 3):
            raise UserError(f"{source}: launch.ports.regular must list two ports, "
                            "different from each other and from the router's")
        launch_env.check(self.env, self.engine, self.transfer_backend, source, "disaggregated" in self.stacks)
        serverflags.check_words(self.extra_server_args, f"{source}: launch.extra_server_args", self.engine,
                                serverflags.plan_owned(self.engine), "drop it: the launch plan sets it from the "
                                "scenario's other fields and the site options")
        for key, value in self.env.items():
            if key.endswith("_TIMEOUT") and not _positive_number(value):
                raise UserError(f"{source}: launch.env.{key} is {value!r}; give a timeout in seconds above 0")


def _positive_number(value: str) -> bool:
    try:
        number = float(value)
    except ValueError:
        return False
    return math.isfinite(number) and number > 0
