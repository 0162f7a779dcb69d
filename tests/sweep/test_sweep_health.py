"""Waiting for the stack and proving the transport before the first length."""

import json

import pytest
from fakecluster import FakeBench, FakeCluster, mooncake_startup
from sweephelp import config, short_scenario

from pdrepro.backends import backend
from pdrepro.core.errors import UserError
from pdrepro.parsers.mooncake_log import scan
from pdrepro.sweep.rdma_proof import prove
from pdrepro.sweep.runner import run_sweep


def test_waits_until_stack_becomes_healthy(tmp_path):
    with FakeCluster(tmp_path, short_scenario((128,)), ready_after_s=1.0) as c:
        lines = []
        out = run_sweep(config(tmp_path, c, FakeBench(c), lines))
    assert out.done == [128] and out.wait_s >= 0.9
    assert any("decode http://127.0.0.1" in l and "healthy" in l for l in lines)


def test_worker_never_healthy_names_it_and_shows_its_last_log_lines(tmp_path):
    with FakeCluster(tmp_path, short_scenario((128,)), never_ready={"decode"}) as c:
        c.append_log("decode", ["[2026-07-15 10:00:00 TP0] Load weight begin. avail mem=139.10 GB",
                                "RuntimeError: CUDA error: out of memory"])
        bench = FakeBench(c)
        with pytest.raises(UserError) as err:
            run_sweep(config(tmp_path, c, bench, wait_timeout_s=1.0))
    msg = str(err.value)
    assert "decode at http://127.0.0.1" in msg and "not healthy after 1 s" in msg
    assert "last decode log lines:" in msg and "CUDA error: out of memory" in msg
    assert "\n" not in msg
    assert "prefill at" not in msg  # the healthy one is not blamed
    assert bench.calls == []


def test_worker_without_health_generate_falls_back_to_health(tmp_path):
    with FakeCluster(tmp_path, short_scenario((128,)), health_generate=False) as c:
        out = run_sweep(config(tmp_path, c, FakeBench(c)))
        assert ("GET", "/health") in c.prefill.requests
    assert out.done == [128]


def test_router_without_readiness_is_checked_with_health_generate(tmp_path):
    with FakeCluster(tmp_path, short_scenario((128,)), router_readiness=False) as c:
        out = run_sweep(config(tmp_path, c, FakeBench(c)))
        assert ("GET", "/health_generate") in c.router.requests
    assert out.done == [128]


@pytest.mark.parametrize("transport, found", [
    ("tcp", "HCAs found [0]"),
    ("force-tcp", "'MC_FORCE_TCP is set'"),
    ("no-gid", "no suitable GID on mlx5_0/1"),
    ("none", "no Mooncake transport lines"),
])
def test_transport_not_rdma_stops_before_first_length(tmp_path, transport, found):
    with FakeCluster(tmp_path, short_scenario((128,)), transport=transport) as c:
        bench = FakeBench(c)
        with pytest.raises(UserError) as err:
            run_sweep(config(tmp_path, c, bench))
    msg = str(err.value)
    assert msg.startswith("KV transport is not RDMA: prefill:") and found in msg
    assert "MC_FORCE_TCP" in msg  # the fix is named
    assert bench.calls == []
    assert list((tmp_path / "run" / "bench").iterdir()) == []
    # What was found is kept for debugging: the logs and the failed proof.
    assert (tmp_path / "run" / "logs" / "prefill.log").is_file()
    prov = json.loads((tmp_path / "run" / "provenance.json").read_text())
    assert prov["transport"]["proven"] is False and found in prov["transport"]["servers"]["prefill"]["summary"]


@pytest.mark.parametrize("transport", ["tcp", "force-tcp"])
def test_transport_any_lets_a_tcp_engine_sweep_and_records_what_it_used(tmp_path, transport):
    sc = short_scenario((128,)).model_copy(update={"transport": "any"})
    with FakeCluster(tmp_path, sc, transport=transport) as c:
        lines = []
        out = run_sweep(config(tmp_path, c, FakeBench(c), lines))
    assert out.done == [128]
    assert any(l.startswith("transport: tcp, allowed by the scenario (transport: any): prefill: tcp") for l in lines)
    prov = json.loads((tmp_path / "run" / "provenance.json").read_text())
    assert prov["transport"]["proven"] is False and prov["transport"]["servers"]["decode"]["verdict"] == "tcp"


def test_transport_any_still_stops_on_a_broken_rdma_start(tmp_path):
    sc = short_scenario((128,)).model_copy(update={"transport": "any"})
    with FakeCluster(tmp_path, sc, transport="no-gid") as c:
        bench = FakeBench(c)
        with pytest.raises(UserError, match=r"KV transport is not RDMA or TCP \(the scenario's transport: any\)"):
            run_sweep(config(tmp_path, c, bench))
    assert bench.calls == []


def test_no_logs_means_no_proof(tmp_path):
    with FakeCluster(tmp_path, short_scenario((128,))) as c:
        with pytest.raises(UserError, match="--logs-from"):
            run_sweep(config(tmp_path, c, FakeBench(c), log_source=None))


def test_tcp_on_one_side_only_is_caught():
    proof = prove({"prefill": "\n".join(mooncake_startup("rdma")), "decode": "\n".join(mooncake_startup("tcp"))},
                  backend("mooncake"))
    assert not proof.proven
    assert "prefill: RDMA on mlx5_0" in proof.describe() and "decode: tcp" in proof.describe()


def test_rdma_gid_without_network_device_is_reported():
    line = ("I0715 10:11:12.000001 4711 rdma_context.cpp:1220] Find best gid index: 1 on rxe0/1 "
            "(network state: without network device)")
    st = scan("prefill", "\n".join([line, "I0715 10:11:12.1 4711 transfer_engine_impl.cpp:388] installTransport, type=rdma"]))
    assert st.verdict == "rdma" and "GID without network device on rxe0" in st.describe()


def test_only_the_latest_server_start_counts(tmp_path):
    """Logs are appended across restarts: an old RDMA start must not vouch for a new TCP one."""
    with FakeCluster(tmp_path, short_scenario((128,)), transport="tcp") as c:
        log = c.log_dir / "prefill.log"
        text = log.read_text()
        rdma_start = "\n".join(["[2026-07-14 09:00:00] server_args=ServerArgs(model_path='/m', disaggregation_mode='prefill')",
                                *mooncake_startup("rdma")])
        log.write_text(rdma_start + "\n" + text)
        with pytest.raises(UserError, match="prefill: tcp"):
            run_sweep(config(tmp_path, c, FakeBench(c)))


def test_logs_of_a_restart_are_appended_to_the_run(tmp_path):
    from pdrepro.sweep.logsource import merge_into

    dest = tmp_path / "prefill.log"
    first = "server_args=ServerArgs(a)\nline 1\n"
    merge_into(dest, first)
    merge_into(dest, first + "line 2\n")  # same server, more lines
    assert dest.read_text() == "server_args=ServerArgs(a)\nline 1\nline 2\n"
    merge_into(dest, first + "line 2\n[t2] server_args=ServerArgs(b)\nline 3\n")  # restarted
    assert dest.read_text() == "server_args=ServerArgs(a)\nline 1\nline 2\n[t2] server_args=ServerArgs(b)\nline 3\n"


def test_a_long_wait_says_every_10_s_what_it_waits_for_and_how_long_of_its_bound(caplog):
    # The wait's own clock and sleep, driven here: 25 s of a stack whose decode answers 503 until then.
    from pdrepro.sweep import health
    now = [0.0]

    def sleep(s):
        now[0] += s

    def call(probe_call):
        role = probe_call.args[0].role
        return None if role == "router" or now[0] >= 25 else f"{probe_call.args[0].url}/health: HTTP 503"

    endpoints = [health.Endpoint("router", "http://127.0.0.1:1", ("/health",)),
                 health.Endpoint("decode", "http://127.0.0.1:2", ("/health",))]
    with caplog.at_level("INFO", logger="pdrepro"):
        waited = health.wait_healthy(endpoints, 900, interval_s=2.0, clock=lambda: now[0], sleep=sleep, call=call)
    assert waited >= 25
    lines = [r.getMessage() for r in caplog.records if "waiting for the stack" in r.getMessage()]
    assert [line.split("; ")[-1] for line in lines] == ["10 s of at most 900 s (--wait-timeout)",
                                                        "20 s of at most 900 s (--wait-timeout)"]
    assert all("decode at http://127.0.0.1:2 (http://127.0.0.1:2/health: HTTP 503)" in line for line in lines)
    assert not any("router at" in line for line in lines)  # healthy at once: not waited for
