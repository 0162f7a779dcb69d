"""NIXL's transport proof (pdrepro.parsers.nixl_log): the recorded H200 run's real logs (UCX over TCP on one
box) and built fixtures for what no machine here produces (RDMA lanes, CUDA IPC on one box, the older
ep_cfg form), each read as a whole and as a stream of an appended log."""

from __future__ import annotations

from pathlib import Path

import pytest

from pdrepro.backends import backend
from pdrepro.parsers import nixl_log
from pdrepro.parsers.serverstart import current_start

TESTS = Path(__file__).resolve().parents[1]
RECORDED = TESTS / "recorded" / "h200-onebox-nixl-and-mooncake-sglang-0.5.15.post1"
FIXTURES = TESTS / "fixtures" / "nixl"


def _recorded(role: str) -> str:
    return (RECORDED / "nixl" / "logs" / f"{role}.log").read_text()


@pytest.mark.parametrize("role", ["prefill", "decode"])
def test_the_recorded_run_is_tcp_on_loopback_and_eth0(role):
    text = _recorded(role)
    st = nixl_log.scan(role, current_start(text))
    assert st.verdict == "tcp"
    assert st.backends == {"UCX"} and st.ucx_tls == "tcp,cuda_copy"
    assert st.transports == {"tcp": {"lo", "eth0"}}
    assert set(st.scopes) == {"self", "intra-node"}  # the peer's lanes, logged at the first transfer
    assert "UCX_TLS=tcp,cuda_copy" in st.describe() and "tcp (eth0, lo)" in st.describe()
    lines = set(text.splitlines())
    assert st.evidence and all(line in lines for line in st.evidence)
    assert any("intra-node cfg#2 rma_am(tcp/lo)" in line for line in st.evidence)


@pytest.mark.parametrize("role", ["prefill", "decode"])
def test_streamed_reading_agrees_with_the_whole_text(role):
    path = RECORDED / "nixl" / "logs" / f"{role}.log"
    with path.open() as f:
        streamed = nixl_log.scan_latest_start(role, f)
    whole = nixl_log.scan(role, current_start(path.read_text()))
    assert streamed.to_dict() == whole.to_dict()
    assert streamed.lines_read == whole.lines_read == len(current_start(path.read_text()).splitlines())


def test_before_any_peer_the_self_endpoint_speaks_only_for_network_lanes():
    # What the sweep sees right after the stack is healthy: decode has logged only its self endpoint.
    text = _recorded("decode")
    cut = text.index("intra-node cfg#2")
    early = nixl_log.scan("decode", current_start(text[: text.rfind("\n", 0, cut)]))
    assert set(early.scopes) == {"self"} and early.verdict == "tcp"  # UCX_TLS left it TCP only
    ipc = (FIXTURES / "ucx-cuda-ipc-onebox-fixture.log").read_text()
    ipc_early = nixl_log.scan("decode", ipc[: ipc.index("intra-node")])
    assert ipc_early.verdict == "unknown"  # self/memory says nothing of a peer
    assert "loopback endpoint" in ipc_early.describe()


def test_rdma_lanes_between_two_nodes():
    st = nixl_log.scan("prefill", (FIXTURES / "ucx-rdma-two-nodes-fixture.log").read_text())
    assert st.verdict == "rdma"
    assert st.transports == {"rc_mlx5": {"mlx5_0:1", "mlx5_1:1"}, "ud_mlx5": {"mlx5_0:1"}}
    assert st.scopes["inter-node"]["rc_mlx5"] == {"mlx5_0:1", "mlx5_1:1"}
    assert st.ucx_tls == "rc,cuda_copy"
    assert st.to_dict()["verdict"] == "rdma" and "rc_mlx5 (mlx5_0:1, mlx5_1:1)" in st.to_dict()["summary"]


def test_cuda_ipc_on_one_box_is_intra_host_and_says_how_to_fix_it():
    st = nixl_log.scan("decode", (FIXTURES / "ucx-cuda-ipc-onebox-fixture.log").read_text())
    assert st.verdict == "intra-host"
    assert "cuda_ipc" in st.transports and "posix" in st.transports
    assert "UCX_TLS=tcp,cuda_copy" in st.describe() and "no network carried the KV" in st.describe()


def test_an_appended_log_counts_its_latest_start_only():
    path = FIXTURES / "ucx-older-appended-fixture.log"
    whole = nixl_log.scan("decode", path.read_text())
    assert whole.verdict == "tcp"  # the earlier start's RDMA lanes and this one's TCP: the weakest speaks
    assert set(whole.transports) == {"rc_verbs", "ud_verbs", "tcp"}
    with path.open() as f:
        latest = nixl_log.scan_latest_start("decode", f)
    assert latest.verdict == "tcp" and set(latest.transports) == {"tcp"}
    assert latest.scopes == {"peer": {"tcp": {"eth0"}}}  # the old form names no scope
    assert latest.lines_read == 3
    with path.open() as f:
        first = nixl_log.scan_latest_start("decode", [line for line in f][:6])  # the comment and the first start
    assert first.verdict == "rdma"


def test_no_lane_lines_is_unknown_and_names_the_log_level():
    text = "\n".join(line for line in _recorded("prefill").splitlines() if "ucp_worker.c" not in line)
    st = nixl_log.scan("prefill", current_start(text))
    assert st.verdict == "unknown" and st.backends == {"UCX"}
    assert "UCX_LOG_LEVEL=info" in st.describe()
    nothing = nixl_log.scan("decode", "[2026-12-01] hello\n")
    assert nothing.verdict == "unknown" and "UCX_LOG_LEVEL=info" in nothing.describe()
    assert "no NIXL or UCX lane lines in 1 log lines" in nothing.describe()


@pytest.mark.parametrize("lanes, verdict", [
    ("rma(rc_mlx5/mlx5_0:1) am(tcp/eth0)", "rdma"),            # KV writes over RDMA; control over TCP
    ("rma_am(tcp/eth0) am(tcp/eth0 rc_mlx5/mlx5_0:1)", "tcp"),  # writes emulated over the TCP lane
    ("rma(cuda_ipc/cuda rc_mlx5/mlx5_0:1) am(rc_mlx5/mlx5_0:1)", "intra-host"),
    ("rma(cuda_copy/cuda) am(self/memory)", "intra-host"),
    ("am(tcp/eth0) ka(tcp/eth0)", "tcp"),                       # no write lane: every lane but keepalive
    ("rma(ugni_rdma/ipogif0) am(ugni_smsg/ipogif0)", "unknown"),  # a transport the bundle does not know
    ("rma(dc_mlx5/mlx5_0:1) am(ud_verbs/mlx5_0:1)", "rdma"),
])
def test_each_peer_configuration_is_judged_by_its_write_lanes(lanes, verdict):
    line = f"[1.000001] [h:1    :0]      ucp_worker.c:1997 UCX  INFO    ctx inter-node cfg#3 {lanes}"
    assert nixl_log.scan("prefill", line).verdict == verdict


def test_one_weak_peer_speaks_for_the_server():
    lines = [f"[1.0] [h:1 :0]      ucp_worker.c:1997 UCX  INFO    ctx inter-node cfg#{i} rma({tl}) am({tl})"
             for i, tl in ((1, "rc_mlx5/mlx5_0:1"), (2, "tcp/eth0"))]
    assert nixl_log.scan("prefill", "\n".join(lines)).verdict == "tcp"


def test_evidence_stays_bounded_on_a_log_of_many_endpoints():
    lines = (f"[1.0] [h:1 :0]      ucp_worker.c:1997 UCX  INFO    ctx inter-node cfg#{i} rma(rc_mlx5/mlx5_{i}:1)"
             for i in range(5000))
    st = nixl_log.scan_latest_start("prefill", lines)
    assert st.lines_read == 5000 and st.verdict == "rdma"
    assert len(st.evidence) == nixl_log.MAX_EVIDENCE
    assert len(st.transports["rc_mlx5"]) == nixl_log.MAX_NAMES


def test_the_backend_reads_through_this_parser_and_fills_ucx_tls_from_the_environment():
    nixl = backend("nixl")
    text = "\n".join(line for line in current_start(_recorded("decode")).splitlines() if "parser.c" not in line)
    st = nixl.scan("decode", text, env={"UCX_TLS": "tcp"})
    assert st.verdict == "tcp" and st.ucx_tls == "tcp"
    with (RECORDED / "nixl" / "logs" / "prefill.log").open() as f:
        assert nixl.scan_latest_start("prefill", f).verdict == "tcp"


@pytest.mark.parametrize("policy", ["rdma", "any"])
def test_the_sweeps_rule_refuses_intra_host_under_either_policy(policy):
    # CUDA IPC or shared memory on one box measures no network: not even `transport: any` (which admits TCP,
    # still a network stack) lets it through, and the refusal names the fix.
    from pdrepro.sweep.rdma_proof import TransportProof

    ipc = nixl_log.scan("decode", (FIXTURES / "ucx-cuda-ipc-onebox-fixture.log").read_text())
    tcp = nixl_log.scan("prefill", current_start(_recorded("prefill")))
    proof = TransportProof((tcp, ipc))  # type: ignore[arg-type]
    assert not proof.allowed(policy) and not proof.proven
    assert "UCX_TLS=tcp,cuda_copy" in proof.describe()
    assert TransportProof((tcp,)).allowed("any") and not TransportProof((tcp,)).allowed("rdma")  # type: ignore[arg-type]
    rdma = nixl_log.scan("prefill", (FIXTURES / "ucx-rdma-two-nodes-fixture.log").read_text())
    assert TransportProof((rdma,)).allowed(policy)  # type: ignore[arg-type]
