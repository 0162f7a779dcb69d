"""What runs on the cluster: every node's servers (argv and environment) and
the one router, built from a scenario and a ``Site`` (where things are on the
nodes) into a ``LaunchPlan`` that no target changes. This module builds it (``Plan``);
the built plan's records are launchplan.py's.

The targets (``pdrepro.launch.targets``) only place these commands: compose env
files, Kubernetes manifests, a SLURM script. Tests render each target and
require the argv it runs to equal the plan's, so they cannot drift apart.
"""

from __future__ import annotations

from dataclasses import replace

from .. import backends, engines
from ..backends import TransferBackend
from ..core.errors import UserError
from ..core.roles import SERVER_ROLES, Role, RoleSpec, ServerPorts
from ..engines import ServingEngine
from ..engines.spec import RouterSpec, ServerSpec, Worker
from ..scenario import launch_env, serverflags
from ..scenario.launch_section import Launch
from ..scenario.model import Scenario
from .launchplan import LaunchPlan, NodeLaunch, ServerLaunch, shell_line, url  # noqa: F401  (re-exported, as below)
from .site import (  # noqa: F401  (re-exported: the targets and the commands read them from the plan)
    DEFAULT_DATASET,
    DEFAULT_IB_DEVICES,
    DEFAULT_LOG_DIR,
    DEFAULT_MODEL_ROOT,
    DEFAULT_START_PERIOD,
    MEMLOCK_UNLIMITED,
    PYTHON,
    SERVER_START_SECONDS,
    Site,
)


class Plan:
    """The launch of one scenario at one site, checked once on construction."""

    def __init__(self, scenario: Scenario, site: Site):
        if scenario.launch is None:
            raise UserError(f"scenario {scenario.name} has no launch section; add one (see the shipped h20-qwen3-235b-1p1d)")
        self.scenario = scenario
        self.launch: Launch = scenario.launch
        self.topology = scenario.topology
        self.site = site
        self.engine: ServingEngine = engines.engine(self.launch.engine)
        self.backend: TransferBackend = backends.backend(site.transfer_backend or self.launch.transfer_backend)
        # The site's flags by meaning: none the plan's own; one the scenario sets too wins (last), and is named.
        serverflags.check_words(site.extra_server_args, "--server-arg", self.launch.engine,
                                serverflags.plan_owned(self.launch.engine), "drop it: the scenario and the site set it")
        self.server_arg_overrides = serverflags.overrides(self.launch.extra_server_args, site.extra_server_args,
                                                          self.launch.engine)
        if self.disaggregated and self.backend.name != self.launch.transfer_backend:
            # The scenario was checked for its own backend; the site's may require other variables.
            launch_env.missing(self.launch.env, self.backend, f"scenario {scenario.name}: launch.env",
                               f"--transfer-backend {self.backend.name}")
        self._check_compose_can_express()
        self._gpus: dict[tuple[str, int, int], tuple[int, ...]] = {}
        self.shared_gpu = False
        if self.disaggregated:
            self._check_hosts()
            slots = [(role, node, k, host, self.tp(role))
                     for role in SERVER_ROLES
                     for node, host in enumerate(self.hosts(role))
                     for k in range(self.role_nodes(role).servers_per_node)]
            self._gpus = self._allocate(slots)
        self.regular_gpus: tuple[tuple[int, ...], tuple[int, ...]] = ((), ())
        if "regular" in self.launch.stacks:
            regular = [("regular", i, 0, host, self.regular_tp) for i, host in enumerate(self.regular_ips())]
            gpus = self._allocate(regular)
            self.regular_gpus = (gpus["regular", 0, 0], gpus["regular", 1, 0])
        self.mem_fraction = self._mem_fraction()

    @property
    def backend_flag(self) -> str:
        """The value the engine's server takes for the chosen backend."""
        self._check_backend_flag()
        return self.engine.backend_flags[self.backend.name]

    def _check_backend_flag(self) -> None:
        flags = self.engine.backend_flags
        if self.backend.name not in flags:
            raise UserError(f"transfer backend {self.backend.name}: {self.engine.label} cannot run it; "
                            f"use one of: {', '.join(flags)}")

    @property
    def disaggregated(self) -> bool:
        return "disaggregated" in self.launch.stacks

    @property
    def regular_tp(self) -> int:
        return self.launch.regular_tp or self.scenario.parallel.prefill_tp

    def spec(self, role: str) -> RoleSpec:
        """The scenario's specification of ROLE with the site's hosts of it."""
        hosts = {Role.PREFILL: self.site.prefill_hosts, Role.DECODE: self.site.decode_hosts}[Role(role)]
        return replace(self.scenario.role(role), hosts=hosts)

    def tp(self, role: str) -> int:
        return self.spec(role).tp

    def role_nodes(self, role: str):
        return self.topology.of(role)

    def hosts(self, role: str) -> tuple[str, ...]:
        return self.spec(role).hosts

    def server_gpus(self, role: str, node: int = 0, server: int = 0) -> tuple[int, ...]:
        return self._gpus.get((role, node, server), ())

    def _check_compose_can_express(self) -> None:
        # These flags are written literally in compose/*.yaml so that the file
        # itself shows the published launch; turning one off needs an edit there.
        for flag in ("trust_remote_code", "disable_radix_cache", "enable_request_time_stats_logging"):
            if not getattr(self.launch, flag):
                raise UserError(
                    f"scenario {self.scenario.name}: launch.{flag} is false, but compose/*.yaml always pass "
                    f"--{flag.replace('_', '-')}; set it to true or edit the compose files"
                )

    def _check_hosts(self) -> None:
        for role, option in ((Role.PREFILL, "--prefill-ip"), (Role.DECODE, "--decode-ip")):
            want, got = self.role_nodes(role).nodes, len(self.hosts(role))
            if got != want:
                raise UserError(f"{option}: scenario {self.scenario.name} has {want} {role} node(s) but {got} address(es) "
                                f"were given; give one per node, comma-separated")
        seen: dict[tuple[str, int], str] = {}
        for role in SERVER_ROLES:
            for node, host in enumerate(self.hosts(role)):
                for k in range(self.role_nodes(role).servers_per_node):
                    ports = self._ports(role, k)
                    for what, port in (("server", ports.server), ("bootstrap", ports.bootstrap)):
                        if port is None:
                            continue
                        other = seen.setdefault((host, port), f"{role} node {node} ({what})")
                        if other != f"{role} node {node} ({what})":
                            raise UserError(f"{host}: {other} and {role} node {node} ({what}) both need port {port}; "
                                            "give the nodes of one role different addresses")

    def _ports(self, role: str, k: int) -> ServerPorts:
        return self.spec(role).ports(k)

    def _allocate(self, slots) -> dict[tuple[str, int, int], tuple[int, ...]]:
        """Servers sharing a host get consecutive, disjoint slices of that host's GPUs."""
        gpus, given = self.site.gpus, ",".join(map(str, self.site.gpus))
        by_host: dict[str, list] = {}
        for slot in slots:
            by_host.setdefault(slot[3], []).append(slot)
        out: dict[tuple[str, int, int], tuple[int, ...]] = {}
        for host, group in by_host.items():
            need = sum(s[4] for s in group)
            if len(gpus) == 1 < len(group) and need == len(group):
                # One GPU and servers of TP 1: they share it, each with its part of the memory
                # (--mem-fraction-static), started one after the other.
                for role, node, k, _, _ in group:
                    out[role, node, k] = gpus
                self.shared_gpu = True
                continue
            if len(gpus) < need:
                if len(group) == 1:
                    raise UserError(f"--gpus {given}: the {group[0][0]} TP is {need}, larger than the {len(gpus)} GPUs given; "
                                    f"list at least {need} GPU ids")
                tps = " and ".join(str(s[4]) for s in group)
                raise UserError(f"--gpus {given}: {len(group)} servers run on {host} with TP {tps}, which needs {need} GPUs; "
                                "list more GPU ids or use more nodes")
            start = 0
            for role, node, k, _, tp in group:
                out[role, node, k] = gpus[start:start + tp]
                start += tp
        return out

    def _mem_fraction(self) -> float | None:
        fraction: float | None
        if self.site.mem_fraction is not None:
            fraction = self.site.mem_fraction
        elif self.shared_gpu:
            fraction = self.launch.shared_gpu_mem_fraction
            if fraction is None:
                raise UserError(f"--gpus {self.site.gpus[0]}: the servers share GPU {self.site.gpus[0]}, and scenario "
                                f"{self.scenario.name} sets no launch.shared_gpu_mem_fraction; give each its part of the "
                                "memory with --mem-fraction (e.g. 0.30), or list one GPU per server")
        else:
            return None
        flag = self.engine.mem_fraction_flag
        dest = serverflags.resolve(flag, self.launch.engine).dest or flag
        if serverflags.value_of((*self.launch.extra_server_args, *self.site.extra_server_args), dest,
                                self.launch.engine) is not None:
            raise UserError(f"{flag} is given in the extra server args and as a fraction ({fraction}); "
                            "give it once, with --mem-fraction")
        return fraction

    # ---- argv: the engine's module spells it --------------------------------
    def _server_spec(self, port: int, tp: int, mode: str | None = None, bootstrap: int | None = None) -> ServerSpec:
        launch = self.launch
        return ServerSpec(
            python=self.site.python, model_path=self.site.model_path, port=port, tp=tp, dtype=self.scenario.model.dtype,
            stream_interval=launch.stream_interval, chunked_prefill_size=launch.chunked_prefill_size, mode=mode,
            bootstrap_port=bootstrap, backend=None if mode is None else self.backend.name,
            ib_devices_file=None if mode is None else self.site.ib_devices_file, metrics=launch.enable_metrics,
            mem_fraction=self.mem_fraction, extra_args=launch.extra_server_args, site_args=self.site.extra_server_args)

    @property
    def extra_server_args(self) -> list[str]:
        """Every server's argv tail: the scenario's and the site's extras, as the engine appends them."""
        return self.engine.server_extras(self._server_spec(0, 1))

    def prefill_argv(self, server: int = 0) -> list[str]:
        self._check_backend_flag()
        ports = self._ports(Role.PREFILL, server)
        return self.engine.server_argv(self._server_spec(ports.server, self.tp(Role.PREFILL), Role.PREFILL.value,
                                                         ports.bootstrap))

    def decode_argv(self, server: int = 0) -> list[str]:
        self._check_backend_flag()
        port = self._ports(Role.DECODE, server).server
        return self.engine.server_argv(self._server_spec(port, self.tp(Role.DECODE), Role.DECODE.value))

    def router_argv(self) -> list[str]:
        workers = tuple(Worker(role.value, url(host, ports.server), ports.bootstrap)
                        for role in SERVER_ROLES
                        for host in self.hosts(role)
                        for ports in (self._ports(role, k) for k in range(self.role_nodes(role).servers_per_node)))
        return self.engine.router_argv(RouterSpec(self.site.python, self.launch.ports.router, self.launch.router_policy,
                                                  workers=workers))

    def regular_ips(self) -> tuple[str, str]:
        return self.site.prefill_hosts[0], self.site.decode_hosts[0]

    def regular_argv(self, index: int) -> list[str]:
        return self.engine.server_argv(self._server_spec(self.launch.ports.regular[index], self.regular_tp))

    def regular_router_argv(self) -> list[str]:
        ports = self.launch.ports
        urls = tuple(url(ip, port) for ip, port in zip(self.regular_ips(), ports.regular))
        return self.engine.router_argv(RouterSpec(self.site.python, ports.router, self.launch.router_policy, urls=urls))

    # ---- environment ----------------------------------------------------
    @staticmethod
    def gpu_env(gpus: tuple[int, ...]) -> dict[str, str]:
        """The server's GPUs: the container reserves all of them, CUDA picks these."""
        return {"CUDA_DEVICE_ORDER": "PCI_BUS_ID", "CUDA_VISIBLE_DEVICES": ",".join(map(str, gpus))}

    def server_env(self, role: str, instance: int = 0, server: int = 0) -> dict[str, str]:
        """What a server sees besides the image's own environment; ``instance``
        is the node (or the regular instance), ``server`` the server on it."""
        if role == "regular":
            return self.gpu_env(self.regular_gpus[instance])
        env = {self.engine.host_ip_env: self.hosts(role)[instance]}
        env.update({k: self.launch.env[k] for k in self.backend.required_env})
        env.update(launch_env.server_env(self.launch.env, self.engine, self.backend))
        env.update(self.backend.plan_env)
        env.update(self.gpu_env(self._gpus[role, instance, server]))
        return env

    # ---- the plan every target renders ----------------------------------
    def launch_plan(self) -> LaunchPlan:
        if not self.disaggregated:
            raise UserError(f"scenario {self.scenario.name} has no disaggregated stack; "
                            "only the compose target renders regular-only stacks")
        nodes = []
        for role in SERVER_ROLES:
            per_node = self.role_nodes(role).servers_per_node
            for node, host in enumerate(self.hosts(role)):
                servers = []
                for k in range(per_node):
                    ports = self._ports(role, k)
                    argv = {Role.PREFILL: self.prefill_argv, Role.DECODE: self.decode_argv}[role](k)
                    servers.append(ServerLaunch(
                        name=f"{role}-{node}" + (f"-{k}" if per_node > 1 else ""), role=role.value, node=node, index=k,
                        host=host, port=ports.server, bootstrap_port=ports.bootstrap,
                        gpus=self._gpus[role, node, k], env=self.server_env(role, node, k), argv=tuple(argv),
                        position=node * per_node + k))
                nodes.append(NodeLaunch(name=f"{role}-{node}", role=role.value, index=node, host=host, servers=tuple(servers)))
        return LaunchPlan(scenario=self.scenario.name, topology=self.topology.label, nodes=tuple(nodes),
                          router_port=self.launch.ports.router, router_argv=tuple(self.router_argv()),
                          engine=self.engine.name, backend=self.backend.name,
                          server_arg_overrides=self.server_arg_overrides)
