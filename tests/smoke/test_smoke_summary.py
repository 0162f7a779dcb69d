"""The smoke's summary contract, report and host-side checks, from agent output
shaped exactly as the in-container initiator writes it."""

import json
import re
import subprocess
import sys

import pytest

from pdrepro.core.errors import UserError
from pdrepro.core.pins import load_pins
from pdrepro.fabric.limits import engine_memlock_cap
from pdrepro.kinds import smoke as smoke_kind
from pdrepro.rundir import RunDir
from pdrepro.rundir.summarymodel import SmokeSummary as Summary
from pdrepro.smoke import run as smoke_run
from pdrepro.smoke import stack as smoke_stack
from pdrepro.smoke.summary import build_summary
from pdrepro.verdicts.gates import evaluate

TCP_LINES = ["I1129 15:14:26.734120 11810 transfer_engine_impl.cpp:252] Topology discovery complete. Found 0 HCAs.",
             "I1129 15:14:26.734174 11810 tcp_transport.cpp:553] TcpTransport: listen on port 15523"]


def _measure(ms, verified=True):
    ms = list(ms)
    return {"kind": "x", "ms": ms, "verified": verified, "failed_checks": 0 if verified else 1,
            "ms_median": sorted(ms)[len(ms) // 2], "ms_mean": sum(ms) / len(ms)}


def _initiator(plan, mooncake_ms, socket_ms, verified=True, error=None):
    rows = []
    for row, mc, sk in zip(plan.rows, mooncake_ms, socket_ms):
        rows.append({"prompt_len": row.prompt_len, "kv_bytes": row.kv_bytes,
                     "mooncake": _measure([mc * 0.98, mc, mc * 1.05], verified), "socket": _measure([sk, sk, sk])})
    return {"role": "initiator", "requested_transport": "auto", "error": error,
            "evidence": {"transport": "tcp", "hcas_found": 0, "rdma_devices": [], "lines": TCP_LINES},
            "target_evidence": {"transport": "tcp", "hcas_found": 0, "rdma_devices": [], "lines": TCP_LINES},
            "plan": json.loads(plan.to_json()), "memlock_bytes": 8388608, "rows": rows,
            "memory_peak": {"bytes": 300_000_000, "source": "/sys/fs/cgroup/memory.peak"},
            "target_memory_peak": {"bytes": 280_000_000, "source": "/sys/fs/cgroup/memory.peak"}}


def test_summary_follows_the_shared_contract(scenario, plan):
    # 32K tokens: 134.2 MB in 60 ms by Mooncake = 2.24 GB/s; the socket in 55 ms = 2.44 GB/s.
    s = build_summary(scenario, _initiator(plan, [0.4, 8.0, 60.0], [0.3, 7.5, 55.0]), {"run_id": "x"})
    assert s["schema_version"] == 1 and s["source"] == "smoke" and s["transport"] == "tcp"
    # A container bridge has no line rate: none is stated, so no utilisation is computed or drawn.
    assert s["line_rate_GB_s"] is None
    assert [r["prompt_len"] for r in s["rows"]] == [128, 4096, 32768]
    top = s["rows"][-1]
    assert top["kv_bytes"] == 134_217_728
    assert top["transfer_ms_median"] == pytest.approx(60.0)
    assert top["bandwidth_GB_s"] == pytest.approx(134_217_728 / 0.060 / 1e9)
    assert top["socket_bandwidth_GB_s"] == pytest.approx(134_217_728 / 0.055 / 1e9)
    assert top["mooncake_vs_socket"] == pytest.approx(55 / 60)
    assert all(r["utilization_pct"] is None for r in s["rows"])
    assert (top["transfer_ms_min"], top["transfer_ms_max"]) == pytest.approx((60 * 0.98, 60 * 1.05))
    assert top["socket_ms_min"] == top["socket_ms_max"] == pytest.approx(55.0)
    assert top["mooncake_stall"] is None and top["socket_stall"] is None
    # 3 sizes x 2 ways x (3 timed + 1 warm-up), all good.
    assert s["smoke"]["transfers_checked"] == s["smoke"]["transfers_verified"] == 24
    assert top["requests"] == top["expected_requests"] == 3
    assert top["ttft_ms_mean"] is None and top["transfer_share_of_ttft_pct"] is None
    assert all(r["verified"] for r in s["rows"])
    assert s["baseline_GB_s"] == pytest.approx(top["socket_bandwidth_GB_s"])
    assert s["smoke"]["all_verified"] and s["smoke"]["memory_peak_bytes"] == 580_000_000
    assert s["smoke"]["fits_8GB_laptop"] is True
    assert s["issues"] == []
    json.dumps(s, allow_nan=False)


def test_a_corrupted_transfer_becomes_an_error_issue(scenario, plan):
    s = build_summary(scenario, _initiator(plan, [0.4, 8, 60], [0.3, 7.5, 55], verified=False), {})
    assert not s["smoke"]["all_verified"]
    assert {i["kind"] for i in s["issues"]} == {"checksum_mismatch"}
    assert all(i["severity"] == "error" for i in s["issues"])


def test_below_the_socket_target_is_flagged_not_hidden(scenario, plan):
    s = build_summary(scenario, _initiator(plan, [0.4, 8, 100], [0.3, 7.5, 55]), {})
    # Pooled over the two largest sizes: (7.5 + 55) ms of socket against (8 + 100) ms of Mooncake.
    assert s["smoke"]["mooncake_vs_socket_at_largest"] == pytest.approx(62.5 / 108)
    assert s["smoke"]["ratio_prompt_lens"] == [4096, 32768]
    assert [i["kind"] for i in s["issues"]] == ["below_socket"]


def test_a_stalled_size_is_named_with_its_cause_in_summary_report_and_plot(tmp_path, scenario, plan):
    from pdrepro.smoke.plot import axis_top

    init = _initiator(plan, [0.4, 8.0, 60.0], [0.3, 7.5, 55.0])
    # 4096 tokens as issue 17 saw a mid size: some transfers ~60 ms slower than the rest.
    init["rows"][1]["mooncake"] = _measure([8.1, 68.0, 7.9, 67.5, 66.0])
    s = build_summary(scenario, init, {"run_id": "x"})
    mid = s["rows"][1]
    assert mid["mooncake_stall"]["stalled"] == 3 and mid["mooncake_stall"]["delayed_ack_signature"]
    assert s["smoke"]["stalled_prompt_lens"] == [4096]
    (stall_issue,) = [i for i in s["issues"] if i["kind"] == "stall"]
    assert stall_issue["severity"] == "warning" and stall_issue["prompt_len"] == 4096
    assert "3 of 5 Mooncake transfers at 4096 tokens" in stall_issue["message"] and "Nagle" in stall_issue["message"]
    assert 4096 in s["smoke"]["below_target_prompt_lens"]
    run = RunDir(tmp_path)
    plots = smoke_kind.write_outputs(run, s)
    report = run.report_file.read_text()
    assert "4096 tokens, Mooncake: 3 of 5 took 67.5 ms" in report and "delayed ACK" in report
    assert re.search(r"\| +3/5 +\|", report)
    assert [p.name for p in plots] == ["bandwidth.png", "transfers.png"]
    # The axis ends just above the fastest transfer (the socket's 55 ms for 134 MB = 2.44 GB/s), not at a line rate.
    assert axis_top(Summary.model_validate(s).rows) == pytest.approx(134_217_728 / 0.055 / 1e9 * 1.25)
    assert "line rate" not in report.split("## Smoke")[1]


def test_the_run_scenario_records_what_ran(scenario):
    assert scenario.sweep.prompt_lens == (128, 4096, 32768)
    assert scenario.sweep.num_prompts == 3
    assert scenario.name == "smoke-tcp"


def test_a_run_cut_short_keeps_its_rows_and_says_what_is_missing(scenario, plan):
    init = _initiator(plan, [0.4, 8, 60], [0.3, 7.5, 55], error="batch_transfer_sync_read returned -1")
    init["rows"] = init["rows"][:2]
    s = build_summary(scenario, init, {})
    assert len(s["rows"]) == 2
    kinds = {i["kind"] for i in s["issues"]}
    assert kinds == {"smoke_failed", "missing_length"}


def test_outputs_use_the_shared_report_and_plots(tmp_path, scenario, plan):
    s = build_summary(scenario, _initiator(plan, [0.4, 8.0, 60.0], [0.3, 7.5, 55.0]), {"run_id": "x"})
    run = RunDir(tmp_path)
    plots = smoke_kind.write_outputs(run, s)
    report = run.report_file.read_text()
    assert "source: smoke" in report and "transport: tcp" in report
    assert "Mooncake against a plain socket copy" in report
    assert "Mooncake / socket at 4096 and 32768 tokens (pooled): **0.92**" in report
    assert "fits an 8 GB laptop" in report
    assert plots and all(p.is_file() and p.stat().st_size > 1000 for p in plots)
    assert json.loads(run.summary_file.read_text())["rows"][0]["prompt_len"] == 128
    # The shared checks accept a smoke summary (no TTFT figures to check).
    results = evaluate(s, scenario)
    assert results and all(r.passed for r in results), [r.detail for r in results if not r.passed]
    assert {r.prompt_len for r in results if r.name == "completed"} == {128, 4096, 32768}


def test_latest_points_at_the_newest_run(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    smoke_run.link_latest(tmp_path, "a")
    smoke_run.link_latest(tmp_path, "b")
    assert (tmp_path / "latest").resolve() == (tmp_path / "b").resolve()


def test_rdma_request_without_a_device_points_at_softroce(tmp_path, plan):
    with pytest.raises(UserError, match="scripts/softroce.sh up"):
        smoke_run.check_rdma_request("rdma", plan, None, root=tmp_path)
    smoke_run.check_rdma_request("tcp", plan, None, root=tmp_path)


def test_rdma_with_too_little_memlock_names_the_variable(tmp_path, plan):
    (tmp_path / "sys/class/infiniband/rxe0").mkdir(parents=True)
    (tmp_path / "dev/infiniband").mkdir(parents=True)
    with pytest.raises(UserError, match="raise SMOKE_MEMLOCK"):
        smoke_run.check_rdma_request("rdma", plan, "8388608", root=tmp_path)
    smoke_run.check_rdma_request("rdma", plan, "-1", root=tmp_path)
    smoke_run.check_rdma_request("rdma", plan, str(plan.max_bytes), root=tmp_path)


def test_memlock_default_is_the_docker_engines_cap(tmp_path):
    limits = "Limit                     Soft Limit           Hard Limit           Units\n" \
             "Max locked memory         8388608              8388608              bytes\n"
    (tmp_path / "1").mkdir()
    (tmp_path / "1/comm").write_text("systemd\n")
    (tmp_path / "1/limits").write_text(limits.replace("8388608", "unlimited"))
    assert engine_memlock_cap(tmp_path) is None
    (tmp_path / "77").mkdir()
    (tmp_path / "77/comm").write_text("dockerd\n")
    (tmp_path / "77/limits").write_text(limits)
    # An engine without CAP_SYS_RESOURCE (bit 24) cannot raise a container past its own limit.
    (tmp_path / "77/status").write_text("Name:\tdockerd\nCapEff:\t000001fffeffffff\n")
    assert engine_memlock_cap(tmp_path) == "8388608"


def test_memlock_default_is_unlimited_for_an_engine_that_can_raise_it(tmp_path):
    """systemd starts dockerd with an 8 MiB memlock, yet as full root it grants containers unlimited."""
    (tmp_path / "77").mkdir()
    (tmp_path / "77/comm").write_text("dockerd\n")
    (tmp_path / "77/limits").write_text("Max locked memory         8388608              8388608              bytes\n")
    (tmp_path / "77/status").write_text("Name:\tdockerd\nUid:\t0\t0\t0\t0\nCapEff:\t000001ffffffffff\n")
    assert engine_memlock_cap(tmp_path) is None
    # Rootless Docker: full capabilities, but only in its own user namespace (a non-zero uid here).
    (tmp_path / "77/status").write_text("Name:\tdockerd\nUid:\t1000\t1000\t1000\t1000\nCapEff:\t000001ffffffffff\n")
    assert engine_memlock_cap(tmp_path) == "8388608"


def test_no_docker_engine_says_how_to_get_one(monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    with pytest.raises(UserError, match="install Docker .* start it"):
        smoke_stack.docker_client()


def _cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "pdrepro", "smoke", *args], capture_output=True, text=True,
                          timeout=120, env=env)


def test_cli_bad_prompt_length_is_one_line_and_exit_2(tmp_path):
    proc = _cli("--prompt-lens", "100", "--results", str(tmp_path))
    assert proc.returncode == 2
    assert proc.stderr.startswith("pdrepro smoke: error: prompt length 100 is not in scenario smoke-tcp")
    assert "Traceback" not in proc.stderr
    assert not any(tmp_path.iterdir())


def test_cli_rdma_without_device_fails_before_touching_docker(tmp_path):
    import os
    if os.path.isdir("/sys/class/infiniband") and os.listdir("/sys/class/infiniband"):
        pytest.skip("this host has an RDMA device")
    proc = _cli("--transport", "rdma", "--results", str(tmp_path),
                env={**os.environ, "DOCKER_HOST": "unix:///nonexistent/docker.sock"})
    assert proc.returncode == 2
    assert "softroce.sh up" in proc.stderr and "Traceback" not in proc.stderr


def _stack_config(tmp_path, plan, transport, **extra):
    import os

    try:
        smoke_stack.compose_command()
    except UserError as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(str(exc))
        pytest.skip(str(exc))
    opts = smoke_stack.SmokeOptions(scenario=None, plan=plan, image=load_pins()["SMOKE_IMAGE"], transport=transport,
                                  results=tmp_path, compose_file=smoke_stack.find_compose_file(None),
                                  memlock="8388608", timeout_s=60, host_ip="192.0.2.10", **extra)
    stack = smoke_stack.Stack(opts, RunDir(tmp_path / "run"), "pdsmoke-config-test")
    import yaml
    return yaml.safe_load(stack._compose("config").stdout)


def test_compose_wiring_over_tcp(tmp_path, plan):
    cfg = _stack_config(tmp_path, plan, "tcp")
    for name in ("prefill", "decode"):
        svc = cfg["services"][name]
        assert "IPC_LOCK" in svc["cap_add"]
        assert svc["ulimits"]["memlock"] == {"soft": 8388608, "hard": 8388608}
        assert svc["environment"]["SMOKE_TRANSPORT"] == "tcp"
        assert json.loads(svc["environment"]["SMOKE_PLAN"])["rows"][0]["kv_bytes"] == 524_288
        assert svc["volumes"][0]["target"] == "/results"
        assert svc["volumes"][0]["source"].endswith("run/raw")
        assert "network_mode" not in svc and "smoke" in svc["networks"]
    assert cfg["services"]["decode"]["environment"]["SMOKE_PEER"] == "prefill"


def test_tcp_nodelay_preloads_a_built_library_into_both_agents(tmp_path, plan):
    import shutil

    if not (shutil.which("cc") or shutil.which("gcc")):
        pytest.skip("--tcp-nodelay builds its library with the host's C compiler; none here (an opt-in experiment)")
    cfg = _stack_config(tmp_path, plan, "tcp", tcp_nodelay=True)
    lib = tmp_path / "run" / "nodelay" / "nodelay.so"
    assert lib.is_file()
    for name in ("prefill", "decode"):
        svc = cfg["services"][name]
        assert svc["environment"]["LD_PRELOAD"] == "/opt/pdrepro-nodelay/nodelay.so"
        mount = next(v for v in svc["volumes"] if v["target"] == "/opt/pdrepro-nodelay")
        assert mount["source"] == str(lib.parent) and mount["read_only"]
        assert svc["environment"]["SMOKE_TRANSPORT"] == "tcp"   # the base service is still there
    # The library does what it is for: a socket connected or accepted under it has TCP_NODELAY on.
    probe = ("import socket; s = socket.create_server(('127.0.0.1', 0)); c = socket.create_connection(s.getsockname()); "
             "a, _ = s.accept(); print(c.getsockopt(6, socket.TCP_NODELAY), a.getsockopt(6, socket.TCP_NODELAY))")
    import os
    for preload, want in ((str(lib), "1 1"), ("", "0 0")):
        out = subprocess.run([sys.executable, "-c", probe], env={**os.environ, "LD_PRELOAD": preload},
                             capture_output=True, text=True, check=True).stdout.split()
        assert " ".join(out) == want


def test_quickack_turns_delayed_acks_off_on_the_bridge_route_only(tmp_path, plan):
    cfg = _stack_config(tmp_path, plan, "tcp", quickack=True)
    for name, role in (("prefill", "target"), ("decode", "initiator")):
        svc = cfg["services"][name]
        assert {"IPC_LOCK", "NET_ADMIN"} <= set(svc["cap_add"])
        script = svc["command"][-1]
        assert "quickack 1" in script and script.endswith(f"exec python3 -m pdrepro.smoke.agent {role}")
        assert "network_mode" not in svc
    with pytest.raises(UserError, match="host network"):
        _stack_config(tmp_path / "rdma", plan, "rdma", quickack=True)


def test_a_stall_in_a_run_without_nagle_is_not_blamed_on_it(scenario, plan):
    init = _initiator(plan, [0.4, 8.0, 60.0], [0.3, 7.5, 55.0])
    init["rows"][1]["mooncake"] = _measure([8.1, 68.0, 7.9, 67.5, 66.0])
    for flag in ("tcp_nodelay", "quickack"):
        s = build_summary(scenario, init, {flag: True})
        assert s["smoke"][flag] is True
        assert "not Nagle against delayed ACKs" in s["rows"][1]["mooncake_stall"]["likely_cause"]


def test_compose_wiring_for_rdma_uses_the_host_network(tmp_path, plan):
    cfg = _stack_config(tmp_path, plan, "rdma")
    ports = set()
    for name in ("prefill", "decode"):
        svc = cfg["services"][name]
        assert svc["network_mode"] == "host" and not svc.get("networks")
        assert svc["environment"]["SMOKE_HOST_IP"] == "192.0.2.10"
        ports.add((svc["environment"]["SMOKE_CONTROL_PORT"], svc["environment"]["SMOKE_DATA_PORT"]))
    assert len(ports) == 1 and "18080" not in ports.pop()  # free ports picked, the same on both sides
    assert cfg["services"]["decode"]["environment"]["SMOKE_PEER"] == "192.0.2.10"


class _Exited:
    """A stopped container as the Docker SDK shows its log."""

    def __init__(self, text: str) -> None:
        self.text = text

    def logs(self, tail=None):
        return self.text.encode()


def test_a_dead_agent_leads_with_its_own_error_not_the_engine_chatter():
    log = ("I1129 16:10:47.184582     1 transfer_engine_impl.cpp:252] Topology discovery complete. Found 0 HCAs.\n"
           "[smoke prefill] error: RDMA was requested but Mooncake fell back to tcp: no /dev/infiniband in the "
           "container\n"
           "I1129 16:10:47.386174     1 transfer_metadata.cpp:485] removeSegmentDesc 172.17.0.2:15491 finish\n")
    msg = smoke_stack.died("prefill", 1, _Exited(log), " before the transfers finished")
    first = msg.splitlines()[0]
    assert first == ("the prefill container died (exit 1) before the transfers finished: RDMA was requested but "
                     "Mooncake fell back to tcp: no /dev/infiniband in the container")
    assert "removeSegmentDesc" in msg  # the context stays below
    assert smoke_stack.died("decode", 7, _Exited("boom\n")).splitlines()[0] == "the decode container died (exit 7)"


def test_an_unresolvable_host_name_asks_for_smoke_host_ip(monkeypatch):
    import socket

    def fail(name):
        raise socket.gaierror(-2, "Name or service not known")

    monkeypatch.setattr(socket, "gethostbyname", fail)
    with pytest.raises(UserError, match="set SMOKE_HOST_IP"):
        smoke_stack.host_address()


class _Container:
    """A container as wait_for_decode polls it: a status and exit code per reload, then the last."""

    def __init__(self, states: list[tuple[str, int]]) -> None:
        self.states, self.status, self.attrs = list(states), "running", {"State": {"ExitCode": 0}}

    def reload(self) -> None:
        status, code = self.states.pop(0) if len(self.states) > 1 else self.states[0]
        self.status, self.attrs = status, {"State": {"ExitCode": code}}

    def logs(self, tail=None, **kw):
        return b"[smoke prefill] error: boom\n"


def _poll(monkeypatch, decode, prefill):
    monkeypatch.setattr(smoke_stack, "containers", lambda client, project: {"decode": decode, "prefill": prefill})
    monkeypatch.setattr(smoke_stack, "_follow", lambda container, stop: None)
    return smoke_stack.wait_for_decode(None, "p", timeout_s=30)


def test_a_prefill_that_exits_0_after_decode_said_done_is_not_a_death(monkeypatch):
    # Seen in CI: the decode side told the prefill it was done, the prefill exited 0, and the poll saw
    # that before the decode container had exited.
    decode = _Container([("running", 0), ("exited", 0)])
    assert _poll(monkeypatch, decode, _Container([("exited", 0)])) == 0


def test_a_prefill_that_fails_is_still_a_death(monkeypatch):
    with pytest.raises(UserError, match=r"prefill container died \(exit 1\) before the transfers finished"):
        _poll(monkeypatch, _Container([("running", 0)]), _Container([("exited", 1)]))
