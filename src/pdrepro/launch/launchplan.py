"""The target-independent launch plan as built: each node's servers with their argv and environment, and the one
router. Every target (compose, Kubernetes, SLURM) renders from these records, so the argv a server or the router
runs is the same wherever it is started; ``Plan`` (plan.py) builds them from a scenario and a site."""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from ..rundir import server_log_name


def url(host: str, port: int) -> str:
    return f"http://{host}:{port}"


@dataclass(frozen=True)
class ServerLaunch:
    name: str                 # prefill-0, decode-1, prefill-0-1 (node 0, server 1)
    role: str                 # prefill | decode
    node: int                 # index among the role's nodes
    index: int                # index among the node's servers
    host: str
    port: int
    bootstrap_port: int | None
    gpus: tuple[int, ...]     # host GPU ids, as CUDA_VISIBLE_DEVICES
    env: dict[str, str]
    argv: tuple[str, ...]
    position: int = 0         # index among all the role's servers, node-major

    @property
    def url(self) -> str:
        return url(self.host, self.port)

    @property
    def log_name(self) -> str:
        """The file its output goes to in the role's log folder; unique over the whole plan."""
        return server_log_name(self.role, self.position)


@dataclass(frozen=True)
class NodeLaunch:
    name: str                 # prefill-0, decode-0
    role: str
    index: int
    host: str
    servers: tuple[ServerLaunch, ...]


@dataclass(frozen=True)
class LaunchPlan:
    scenario: str
    topology: str             # e.g. 2P2D
    nodes: tuple[NodeLaunch, ...]
    router_port: int
    router_argv: tuple[str, ...]
    # The registry names of the serving engine and the transfer backend the servers run.
    engine: str = ""
    backend: str = ""
    # Flags the command line's --server-arg sets over the scenario's own (serverflags.overrides).
    server_arg_overrides: tuple[str, ...] = ()

    def role(self, role: str) -> tuple[NodeLaunch, ...]:
        return tuple(n for n in self.nodes if n.role == role)

    @property
    def servers(self) -> tuple[ServerLaunch, ...]:
        return tuple(s for n in self.nodes for s in n.servers)


def shell_line(env: dict[str, str], argv: list[str] | tuple[str, ...]) -> str:
    """argv as an operator would type it: env prefix, then one flag per line."""
    head = [f"{k}={shlex.quote(v)}" for k, v in env.items()]
    words = [shlex.quote(a) for a in argv]
    # python3 -m module stays on the first line with the environment.
    first = " ".join(head + words[:3])
    rest: list[str] = []
    for word, raw in zip(words[3:], argv[3:]):
        if raw.startswith("--") or not rest:
            rest.append(word)
        else:
            rest[-1] += " " + word
    return " \\\n    ".join([first, *rest])
