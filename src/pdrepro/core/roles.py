"""The roles of a disaggregated stack as a type, and the one per-role specification every step reads.

``Role`` is a str-valued enumeration: a role written into JSON, YAML, a file name or a message is its
plain string ("prefill"), so every file on disk reads as before. ``RoleSpec`` gathers what the scenario,
its launch section and the site say about one role (TP, nodes, servers per node, ports, hosts), so no
module picks between two fields with a ``"prefill" if ... else`` of its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import NamedTuple


class Role(str, Enum):
    """A str-valued enumeration that reads as its value in str() and f-strings, as enum.StrEnum does;
    written out because StrEnum is Python 3.11+ and the package runs on 3.10."""

    PREFILL = "prefill"
    DECODE = "decode"
    # The router is a process of the stack (stack.json, the launch plan), not a server role.
    ROUTER = "router"
    # A regular (not disaggregated) server of a comparison's regular stack: a process of that stack
    # (stack.json), never one of SERVER_ROLES, which are the disaggregated roles.
    REGULAR = "regular"

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)


# The roles that run SGLang servers, in the order every plan, log and record lists them.
SERVER_ROLES: tuple[Role, ...] = (Role.PREFILL, Role.DECODE)


class ServerPorts(NamedTuple):
    """One server's ports: its HTTP port and, for a prefill server, its bootstrap port."""

    server: int
    bootstrap: int | None


@dataclass(frozen=True)
class RoleSpec:
    """One server role: the TP of each server, its nodes and servers per node, the first server's port
    (server k of a node listens on port + k), the prefill servers' bootstrap port, and the role's hosts
    (one per node; empty until a site gives them)."""

    role: Role
    tp: int
    nodes: int
    servers_per_node: int
    port: int | None = None
    bootstrap_port: int | None = None
    hosts: tuple[str, ...] = ()

    @property
    def servers(self) -> int:
        """Servers of the role over all its nodes."""
        return self.nodes * self.servers_per_node

    def ports(self, server: int) -> ServerPorts:
        """Server SERVER's own port and, for prefill, its bootstrap port (None for decode)."""
        if self.port is None:
            raise ValueError(f"the {self.role} role has no port in the scenario's launch section")
        bootstrap = self.bootstrap_port + server if self.bootstrap_port is not None else None
        return ServerPorts(self.port + server, bootstrap)
