"""The interface every serving-engine module fills in."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from ..core.seampart import SeamPart
from .spec import RouterSpec, ServerSpec


class ServingEngine(SeamPart, Protocol):
    # Read-only members: the modules are frozen dataclasses. Name, label, environment prefixes, modules,
    # distributions and pin keys: see SeamPart.
    # The transfer backends it can run, each with the value its server flag takes.
    @property
    def backend_flags(self) -> Mapping[str, str]: ...
    @property
    def server_module(self) -> str: ...
    @property
    def router_module(self) -> str: ...
    @property
    def bench_module(self) -> str: ...
    @property
    def bench_backend(self) -> str: ...
    # Paths a worker / the router answer when healthy, tried in order; the server's own arguments.
    @property
    def worker_health_paths(self) -> tuple[str, ...]: ...
    @property
    def router_health_paths(self) -> tuple[str, ...]: ...
    # The router's liveness path: it answers while the process runs, workers or none (a restart probe).
    @property
    def router_liveness_path(self) -> str: ...
    @property
    def info_path(self) -> str: ...
    # The variable that tells a server the address it advertises to its peers.
    @property
    def host_ip_env(self) -> str: ...
    @property
    def mem_fraction_flag(self) -> str: ...
    # Its server's option strings by field (pdrepro/knobdata/, `make knobs`); None: no guard by meaning.
    @property
    def flag_file(self) -> str | None: ...
    # What-ran rows: the versions.env keys of its nearest release and its router's version; the router's
    # distribution.
    @property
    def release_pin_key(self) -> str: ...
    @property
    def router_distribution(self) -> str: ...
    @property
    def router_pin_key(self) -> str: ...

    def server_argv(self, spec: ServerSpec) -> list[str]:
        """One server's argv: the interpreter, the engine's server module and its flags."""

    def server_extras(self, spec: ServerSpec) -> list[str]:
        """The tail of server_argv after the engine's fixed flags: the scenario's and the site's extras."""

    def router_argv(self, spec: RouterSpec) -> list[str]:
        """The router's argv, disaggregated (spec.workers) or regular (spec.urls)."""
