"""pdrepro.core.roles: the role enumeration and the one per-role specification the scenario and the launch give."""

from __future__ import annotations

import json

import pytest

from pdrepro.core.roles import SERVER_ROLES, Role, RoleSpec, ServerPorts
from pdrepro.scenario.model import load_scenario


def test_a_role_reads_and_writes_as_its_plain_string():
    assert Role("prefill") is Role.PREFILL and f"{Role.DECODE}-0" == "decode-0"
    assert json.dumps({Role.PREFILL: [Role.DECODE]}) == '{"prefill": ["decode"]}'
    assert SERVER_ROLES == ("prefill", "decode") and Role.ROUTER not in SERVER_ROLES


def test_the_scenario_gives_each_role_its_tp_nodes_and_ports():
    sc = load_scenario("h20-qwen3-235b-2p2d")
    for role in SERVER_ROLES:
        spec = sc.role(role)
        assert spec.tp == getattr(sc.parallel, f"{role}_tp")
        assert (spec.nodes, spec.servers_per_node) == (getattr(sc.topology, role).nodes,
                                                      getattr(sc.topology, role).servers_per_node)
        assert spec.servers == sc.topology.servers(role)
        assert spec.port == getattr(sc.launch.ports, role)
    assert sc.role("prefill").ports(1) == ServerPorts(server=sc.launch.ports.prefill + 1,
                                                      bootstrap=sc.launch.ports.bootstrap + 1)
    assert sc.role("decode").ports(0) == ServerPorts(server=sc.launch.ports.decode, bootstrap=None)


def test_a_role_without_ports_or_an_unknown_role_is_refused():
    with pytest.raises(ValueError, match="no port"):
        RoleSpec(Role.DECODE, tp=1, nodes=1, servers_per_node=1).ports(0)
    with pytest.raises(ValueError):
        load_scenario("h20-qwen3-235b-1p1d").role("regular")
