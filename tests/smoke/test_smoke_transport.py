"""Transport detection from the engine's own start-up lines (format as logged by
mooncake-transfer-engine 0.3.11.post1 and by RDMA hosts in the field)."""

import pytest

from pdrepro.core.errors import UserError
from pdrepro.parsers.mooncake_log import detect
from pdrepro.scenario.smokeplan import PlanRow, SmokePlan
from pdrepro.smoke import engine, memory
from pdrepro.smoke.settings import Settings

# Recorded from the non-CUDA wheel on a host without RDMA devices.
TCP_LOG = """\
WARNING: Logging before InitGoogleLogging() is written to STDERR
W1129 15:14:26.729544 11810 transfer_engine_py.cpp:96] Using default malloc/free for protocol: rdma
I1129 15:14:26.729610 11810 transfer_engine_impl.cpp:811] Metrics reporting is disabled (set MC_TE_METRIC=1 to enable)
I1129 15:14:26.729625 11810 transfer_engine_impl.cpp:115] Transfer Engine parseHostNameWithPort. server_name: 127.0.0.1 port: 12001
I1129 15:14:26.729897 11810 transfer_engine_impl.cpp:182] Transfer Engine RPC using P2P handshake, listening on 127.0.0.1:15477
I1129 15:14:26.734030 11810 transfer_engine_impl.cpp:237] Auto-discovering topology...
W1129 15:14:26.734088 11810 topology.cpp:152] No RDMA devices found, check your device installation
I1129 15:14:26.734120 11810 transfer_engine_impl.cpp:252] Topology discovery complete. Found 0 HCAs.
E1129 15:14:26.734154 11810 transfer_metadata.cpp:877] Local segment descriptor not found
I1129 15:14:26.734174 11810 tcp_transport.cpp:553] TcpTransport: listen on port 15523
""".splitlines()

# An RDMA host: one HCA, the RDMA transport installed, GID picked.
RDMA_LOG = """\
I1018 00:46:05.891203 2913040 transfer_engine.cpp:185] Auto-discovering topology...
I1018 00:46:05.891713 2913040 transfer_engine.cpp:200] Topology discovery complete. Found 1 HCAs.
I1018 00:46:05.891750 2913040 multi_transport.cpp:110] installTransport, type=rdma
I1018 00:46:05.914466 2913040 rdma_context.cpp:491] Find best gid index: 1 on rxe0/1
I1018 00:46:05.915460 2913040 rdma_context.cpp:129] RDMA device: rxe0, LID: 0, GID: (GID_Index 1) 00:00:00:00:00:00:00:00:00:00:ff:ff:c0:a8:01:0a
""".splitlines()


def test_tcp_is_read_from_the_log_not_from_the_requested_protocol():
    # The log above was produced with protocol "rdma" requested: the engine still chose TCP.
    ev = detect(TCP_LOG)
    assert ev.transport == "tcp"
    assert ev.hcas_found == 0
    assert ev.rdma_devices == ()
    assert any("TcpTransport: listen on port" in line for line in ev.lines)
    assert not any("Metrics reporting" in line for line in ev.lines)


def test_rdma_with_its_device():
    ev = detect(RDMA_LOG)
    assert ev.transport == "rdma"
    assert ev.hcas_found == 1
    assert ev.rdma_devices == ("rxe0",)


def test_force_tcp_wins_over_a_present_hca():
    lines = RDMA_LOG[:2] + ["I1129 15:14:26.734174 11810 tcp_transport.cpp:553] TcpTransport: listen on port 15523"]
    assert detect(lines, force_tcp=True).transport == "tcp"
    assert detect(lines, force_tcp=False).transport == "tcp"  # no RDMA line: not RDMA


def test_no_startup_lines_means_unknown():
    ev = detect(["I1129 15:14:26.729610 11810 transfer_engine_impl.cpp:811] Metrics reporting is disabled"])
    assert ev.transport is None


def _settings(transport):
    plan = SmokePlan((PlanRow(128, 1 << 20),), 1, 1 << 20, 1)
    return Settings(plan, transport, 1, 2, "prefill", None, 1.0, None)


def test_rdma_requested_but_tcp_used_fails_with_the_reason(monkeypatch):
    monkeypatch.delenv("MC_FORCE_TCP", raising=False)
    with pytest.raises(UserError, match=r"RDMA was requested but Mooncake fell back to tcp: .*found 0 HCAs.*softroce\.sh"):
        engine.require_transport(_settings("rdma"), detect(TCP_LOG))


def test_rdma_requested_and_used_passes():
    engine.require_transport(_settings("rdma"), detect(RDMA_LOG))
    engine.require_transport(_settings("auto"), detect(TCP_LOG))


def test_unknown_transport_is_an_error_even_in_auto():
    with pytest.raises(UserError, match="cannot tell which transport"):
        engine.require_transport(_settings("auto"), detect([]))


def test_fallback_reasons_point_at_the_fix():
    zero = detect(TCP_LOG)
    assert "MC_FORCE_TCP=1" in engine.fallback_reason(zero, force_tcp=True, ib_dir_present=True)
    assert "scripts/softroce.sh up" in engine.fallback_reason(zero, force_tcp=False, ib_dir_present=False)
    assert "ACTIVE" in engine.fallback_reason(zero, force_tcp=False, ib_dir_present=True)


def test_memlock_too_low_for_rdma_names_the_variable(monkeypatch):
    monkeypatch.setattr(memory, "memlock_limit", lambda: 8 << 20)
    with pytest.raises(UserError, match="raise SMOKE_MEMLOCK"):
        memory.require_memlock("rdma", 134_217_728)
    memory.require_memlock("tcp", 134_217_728)  # TCP pins nothing
    memory.require_memlock("rdma", 4 << 20)


# Newer builds skip discovery under MC_FORCE_TCP and put the year in glog's prefix.
FORCED_LOG = """\
W20261129 15:36:19.106889 27706 transfer_engine_py.cpp:100] Using default malloc/free for protocol: tcp
I20261129 15:36:19.111845 27706 transfer_engine_impl.cpp:182] Transfer Engine RPC using P2P handshake, listening on 127.0.0.1:15035
E20261129 15:36:19.112051 27706 transfer_metadata.cpp:991] Local segment descriptor not found
I20261129 15:36:19.112084 27706 tcp_transport.cpp:917] TcpTransport: listen on port 16317
I20261129 15:36:19.112380 27706 transfer_engine_impl.cpp:218] MC_FORCE_TCP is set, using TCP transport only
""".splitlines()


def test_forced_tcp_in_the_newer_log_format():
    ev = detect(FORCED_LOG, force_tcp=True)
    assert ev.transport == "tcp" and ev.hcas_found is None
    assert any("MC_FORCE_TCP is set" in line for line in ev.lines)
    assert "MC_FORCE_TCP=1" in engine.fallback_reason(ev, force_tcp=True, ib_dir_present=True)


def test_smoke_reads_the_sweeps_rule_a_failed_rdma_install_is_not_rdma():
    # The sweep fails such a server (rdma-broken); the smoke must not call it RDMA either.
    broken = RDMA_LOG + ["E1018 00:46:05.916000 2913040 multi_transport.cpp:120] Failed to install RDMA transport"]
    assert detect(broken).transport is None
    with pytest.raises(UserError, match="cannot tell which transport"):
        engine.require_transport(_settings("auto"), detect(broken))


def test_force_tcp_in_the_environment_wins_over_rdma_lines_when_tcp_listens():
    both = RDMA_LOG + ["I1129 15:14:26.734174 11810 tcp_transport.cpp:553] TcpTransport: listen on port 15523"]
    assert detect(both, force_tcp=False).transport == "rdma"
    assert detect(both, force_tcp=True).transport == "tcp"
