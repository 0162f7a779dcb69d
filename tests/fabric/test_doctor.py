"""pdrepro doctor against kernel-shaped sysfs trees, nvidia-smi output (recorded, and
fixtures in its exact format) and a Docker API stand-in."""

from __future__ import annotations

import json
import resource
import socket
from pathlib import Path

import fakebin
import pytest
from fakedocker import FakeDocker, info
from sysfs_builder import h20_node, rxe_node

from pdrepro.cli import main
from pdrepro.fabric import doctor
from pdrepro.fabric.checks.rdma import roce_mtu
from pdrepro.scenario.model import load_scenario

INF = resource.RLIM_INFINITY
SCENARIO = "h20-qwen3-235b-1p1d"


@pytest.fixture
def bin_dir(tmp_path, monkeypatch):
    return fakebin.first_on_path(tmp_path / "bin", monkeypatch)


@pytest.fixture
def docker_engine(monkeypatch):
    engines = []

    def start(runtimes=("runc", "io.containerd.runc.v2", "nvidia"), version="28.2.2"):
        eng = FakeDocker(info(runtimes, version))
        engines.append(eng)
        monkeypatch.setenv("DOCKER_HOST", eng.url)
        return eng

    yield start
    for e in engines:
        e.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _dev_dir(tmp_path, n=4) -> Path:
    d = tmp_path / "dev-infiniband"
    if d.is_dir():
        return d
    d.mkdir()
    for i in range(n):
        (d / f"uverbs{i}").symlink_to("/dev/null")  # a real character device, readable and writable
    return d


def _model(tmp_path, **overrides) -> Path:
    m = tmp_path / f"model-{len(overrides)}"
    m.mkdir()
    cfg = {"architectures": ["Qwen3MoeForCausalLM"], "num_hidden_layers": 94, "num_attention_heads": 64,
           "num_key_value_heads": 4, "head_dim": 128, **overrides}
    (m / "config.json").write_text(json.dumps(cfg))
    (m / "model-00001-of-00118.safetensors").write_bytes(b"\0" * 16)
    return m


def _ctx(tmp_path, **kw) -> doctor.Context:
    base = dict(sysfs_root=tmp_path / "sys", role="prefill", scenario=load_scenario(SCENARIO), env={},
                dev_dir=_dev_dir(tmp_path), memlock=(INF, INF), ports=[(_free_port(), "test")])
    base.update(kw)
    return doctor.Context(**base)


def _by_name(checks):
    return {c.name: c for c in checks}


def test_healthy_h20_prefill_node_passes_everything(tmp_path, bin_dir, docker_engine):
    h20_node(tmp_path / "sys")
    fakebin.nvidia_smi(bin_dir)
    docker_engine()
    dataset = tmp_path / "sharegpt.json"
    dataset.write_text('[{"id": "x", "conversations": []}]')
    ctx = _ctx(tmp_path, model=_model(tmp_path), dataset=dataset, advertise_ip="192.168.100.11")
    checks, rate = doctor.run_checks(ctx)
    bad = [(c.name, c.status, c.detail) for c in checks if c.status != "pass"]
    assert bad == []
    assert rate == 200.0
    c = _by_name(checks)
    assert "index 3" in c["gid"].detail and "192.168.100.11 on ens10np0" in c["gid"].detail
    assert c["line-rate"].detail.startswith("4 x 400 Gb/s = 1600 Gb/s = 200.0 GB/s (decimal)")
    assert c["gpus"].detail == "8 x NVIDIA H20"
    assert "GPU7->mlx5_3 PIX" in c["gpu-nic-affinity"].detail
    assert "ens10np0" in c["advertise-ip"].detail
    assert c["nvidia-driver"].detail.startswith("driver 580.65.06 (R580 or newer")
    assert "allowed on mlx5_0, mlx5_1, mlx5_2, mlx5_3" in c["relaxed-ordering"].detail
    assert len(checks) == 19


def test_json_output_shape_and_exit_status(tmp_path, bin_dir, docker_engine, capsys):
    h20_node(tmp_path / "sys", down=("mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"))
    fakebin.nvidia_smi(bin_dir)
    docker_engine()
    rc = main(["doctor", "--sysfs-root", str(tmp_path / "sys"), "--json", "--role", "decode"])
    out = json.loads(capsys.readouterr().out)
    # The node's record: doctor's rows and line rate, with the facts the pair check and diagnose read.
    assert {"checks", "line_rate_GB_s", "nics", "software", "role"} <= set(out) and out["role"] == "decode"
    assert out["line_rate_GB_s"] == 0 and isinstance(out["line_rate_GB_s"], float)  # always a GB/s figure
    for c in out["checks"]:
        assert set(c) == {"name", "status", "detail", "fix"} and c["status"] in ("pass", "warn", "fail")
    states = {c["name"]: c["status"] for c in out["checks"]}
    assert states["port-state"] == "fail"
    assert states["dev-infiniband"] == "warn"  # a sysfs copy says nothing about this host's /dev
    assert rc == 1


def test_human_output_lists_fixes(tmp_path, bin_dir, docker_engine, capsys):
    h20_node(tmp_path / "sys", mtu=1500)
    fakebin.nvidia_smi(bin_dir)
    docker_engine()
    main(["doctor", "--sysfs-root", str(tmp_path / "sys")])
    out = capsys.readouterr().out
    assert "WARN  mtu" in out and "RoCE MTU 1024" in out
    assert "To fix:" in out and "mtu 9000" in out
    assert "line rate of active ports 200.0 GB/s" in out


def test_bad_sysfs_root_is_a_user_error(tmp_path, capsys):
    assert main(["doctor", "--sysfs-root", str(tmp_path / "nope")]) == 2
    assert "--sysfs-root" in capsys.readouterr().err


def test_one_port_down_lowers_line_rate(tmp_path, bin_dir):
    h20_node(tmp_path / "sys", down=("mlx5_2",))
    ctx = _ctx(tmp_path, role=None)
    f = doctor.gather(ctx)
    c = doctor.check_ports(ctx, f)
    assert c.status == "warn" and "mlx5_2/1 DOWN/Disabled" in c.detail
    assert doctor.line_rate_GB_s(f) == 150.0


def test_line_rate_differs_from_scenario(tmp_path, bin_dir):
    h20_node(tmp_path / "sys", rate="200 Gb/sec (4X HDR)")
    ctx = _ctx(tmp_path, role=None)
    c = doctor.check_line_rate(ctx, doctor.gather(ctx))
    assert c.status == "warn" and "100.0 GB/s" in c.detail and "= 200.0 GB/s" in c.detail


@pytest.mark.parametrize("mode,word", [("v1-only", "fallback-nonzero"), ("docker-only", "docker0"),
                                       ("no-ip", "network-degraded")])
def test_unusable_gids_fail_with_a_fix(tmp_path, bin_dir, mode, word):
    h20_node(tmp_path / "sys", gid_mode=mode)
    ctx = _ctx(tmp_path)
    c = doctor.check_gids(ctx, doctor.gather(ctx))
    assert c.status == "fail" and word in c.detail
    assert "ip addr add" in c.fix


def test_private_fabric_addresses_are_fine(tmp_path, bin_dir):
    h20_node(tmp_path / "sys", ip_base="10.20")
    ctx = _ctx(tmp_path)
    c = doctor.check_gids(ctx, doctor.gather(ctx))
    assert c.status == "pass" and "network-private-v4" in c.detail


def test_no_devices_warns_on_laptop_and_fails_on_gpu_node(tmp_path, bin_dir):
    (tmp_path / "sys").mkdir()
    laptop = _ctx(tmp_path, role=None, dev_dir=tmp_path)
    assert doctor.check_devices(laptop, doctor.gather(laptop)).status == "warn"
    node = _ctx(tmp_path, dev_dir=tmp_path)
    c = doctor.check_devices(node, doctor.gather(node))
    assert c.status == "fail" and "softroce.sh up" in c.fix


def test_soft_roce_laptop(tmp_path, bin_dir, docker_engine):
    rxe_node(tmp_path / "sys")
    docker_engine(runtimes=("runc",))
    d = tmp_path / "dev"
    d.mkdir()
    (d / "uverbs0").symlink_to("/dev/null")
    checks, rate = doctor.run_checks(_ctx(tmp_path, role=None, scenario=None, dev_dir=d))
    c = _by_name(checks)
    assert rate == 1.25
    assert c["line-rate"].detail.startswith("1 x 10 Gb/s = 10 Gb/s = 1.25 GB/s")
    assert c["rdma-devices"].status == "pass" and "virtual, NUMA -1" in c["rdma-devices"].detail
    assert c["mtu"].status == "warn" and "RoCE MTU 1024" in c["mtu"].detail
    assert c["gpus"].status == "warn" and "nvidia-smi not found" in c["gpus"].detail
    assert c["nvidia-runtime"].status == "pass"
    assert not [x for x in checks if x.status == "fail"]


def test_roce_mtu():
    assert roce_mtu(1500) == 1024
    assert roce_mtu(4200) == 4096
    assert roce_mtu(4000) == 2048
    assert roce_mtu(9000) == 4096


def test_dev_infiniband_missing_and_not_char(tmp_path, bin_dir):
    h20_node(tmp_path / "sys", nics=2)
    d = tmp_path / "dev"
    d.mkdir()
    (d / "uverbs0").write_text("")
    ctx = _ctx(tmp_path, dev_dir=d)
    c = doctor.check_dev_infiniband(ctx, doctor.gather(ctx))
    assert c.status == "fail"
    assert "uverbs0 is not a character device" in c.detail and "uverbs1 missing" in c.detail
    assert "--device /dev/infiniband" in c.fix


def _dockerd(tmp_path, cap_eff: str) -> Path:
    proc = tmp_path / f"proc-{cap_eff}"
    (proc / "812").mkdir(parents=True)
    (proc / "812/comm").write_text("dockerd\n")
    (proc / "812/limits").write_text("Max locked memory         8388608              8388608              bytes\n")
    (proc / "812/status").write_text(f"Name:\tdockerd\nCapEff:\t{cap_eff}\n")
    return proc


def test_memlock(tmp_path, bin_dir):
    (tmp_path / "sys").mkdir()
    limited = (8 * 2**20, 8 * 2**20)
    f = doctor.Facts(devices=[])
    # A login shell capped at 8 MiB on a normal systemd host: the containers still get unlimited.
    capable = _dockerd(tmp_path, "000001ffffffffff")
    c = doctor.check_memlock(_ctx(tmp_path, memlock=limited, proc_root=capable), f)
    assert c.status == "warn" and "8 MiB" in c.detail and "can grant it" in c.detail and "memlock=-1" in c.fix
    # An engine without CAP_SYS_RESOURCE (bit 24) holds every container to its own limit.
    capped = _dockerd(tmp_path, "000001fffeffffff")
    c = doctor.check_memlock(_ctx(tmp_path, memlock=limited, proc_root=capped), f)
    # No cgroup file and no parent: started by hand, so the fix is a restart under a raised limit.
    assert c.status == "fail" and "without CAP_SYS_RESOURCE" in c.detail and "ulimit -l unlimited" in c.fix
    assert doctor.check_memlock(_ctx(tmp_path, memlock=limited, proc_root=capped, role=None), f).status == "warn"
    assert doctor.check_memlock(_ctx(tmp_path, proc_root=capped), f).status == "pass"


def test_gpu_memory_registration(tmp_path, bin_dir):
    h20_node(tmp_path / "sys", peermem=False)
    f = doctor.Facts(devices=[])
    c = doctor.check_gpu_registration(_ctx(tmp_path), f)
    assert c.status == "fail" and "WITH_NVIDIA_PEERMEM=0" in c.fix
    assert "WITH_NVIDIA_PEERMEM=1 (scenario h20-qwen3-235b-1p1d)" in c.detail
    c = doctor.check_gpu_registration(_ctx(tmp_path, scenario=None, env={"WITH_NVIDIA_PEERMEM": "0"}), f)
    assert c.status == "pass" and "DMA-BUF" in c.detail and "(environment)" in c.detail


def test_ports_follow_the_scenario_launch(tmp_path):
    scen = load_scenario(SCENARIO)
    ctx = doctor.Context(sysfs_root=tmp_path, role="prefill", scenario=scen)
    assert [p for p, _ in ctx.wanted_ports()] == [30000, 8998]
    # The router runs on the decode node, next to the decode server (the decode node's rendered compose file).
    ctx = doctor.Context(sysfs_root=tmp_path, role="decode", scenario=scen)
    assert [p for p, _ in ctx.wanted_ports()] == [30001, 8000]
    assert [p for p, _ in doctor.Context(sysfs_root=tmp_path, role="decode").wanted_ports()] == [30001, 8000]


def test_gpus_missing_or_too_few(tmp_path, bin_dir):
    h20_node(tmp_path / "sys")
    ctx = _ctx(tmp_path)
    c = doctor.check_gpus(ctx, doctor.gather(ctx))
    assert c.status == "fail" and "nvidia-smi not found" in c.detail
    four = tmp_path / "four.csv"
    four.write_text("".join(fakebin.served(fakebin.FIXTURES / "nvidia-smi" / "h20-query-gpu.csv").splitlines(True)[:5]))
    fakebin.nvidia_smi(bin_dir, query=four)
    c = doctor.check_gpus(ctx, doctor.gather(ctx))
    assert c.status == "fail" and "4 x NVIDIA H20" in c.detail and "TP 8" in c.detail


def test_gpus_far_from_nics_warn(tmp_path, bin_dir):
    h20_node(tmp_path / "sys", down=("mlx5_0", "mlx5_1"))
    fakebin.nvidia_smi(bin_dir)
    ctx = _ctx(tmp_path)
    c = doctor.check_affinity(ctx, doctor.gather(ctx))
    assert c.status == "warn" and "GPU0->mlx5_2 SYS" in c.detail and "4 GPU(s)" in c.detail


def test_docker_unreachable_and_runtime_missing(tmp_path, bin_dir, docker_engine, monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", f"tcp://127.0.0.1:{_free_port()}")
    (c,) = doctor.check_docker(_ctx(tmp_path), doctor.Facts(devices=[]))
    assert c.name == "docker" and c.status == "fail" and "not reachable" in c.detail
    docker_engine(runtimes=("runc",))
    d, rt = doctor.check_docker(_ctx(tmp_path), doctor.Facts(devices=[]))
    assert d.status == "pass" and "28.2.2" in d.detail
    assert rt.status == "fail" and "nvidia-ctk runtime configure" in rt.fix
    # The toolkit's hook alone serves compose's GPU device requests (driver: nvidia).
    fakebin.install(bin_dir, "nvidia-container-runtime-hook", "exit 0\n")
    d, rt = doctor.check_docker(_ctx(tmp_path), doctor.Facts(devices=[]))
    assert rt.status == "pass" and "nvidia-container-runtime-hook present" in rt.detail


@pytest.mark.parametrize("version, role, status", [
    ("24.0.7", "prefill", "fail"),        # a GPU node: the stacks' start_interval needs Engine 25
    ("20.10.24+dfsg1", None, "pass"),     # Debian 12's docker.io on a smoke host: enough
    ("25.0.3", "decode", "pass"),
])
def test_docker_engine_version_for_the_gpu_stacks(tmp_path, docker_engine, version, role, status):
    docker_engine(version=version)
    d = doctor.check_docker(_ctx(tmp_path, role=role), doctor.Facts(devices=[]))[0]
    assert d.status == status and version in d.detail
    if role and status == "fail":
        assert "Engine 25 or later" in d.detail and "docker-ce" in d.fix
    if not role and version.startswith("20."):
        assert "enough for the smoke" in d.detail


def test_model_and_dataset_problems(tmp_path, bin_dir):
    scen = load_scenario(SCENARIO)
    f = doctor.Facts(devices=[])
    (c,) = doctor.check_model(_ctx(tmp_path, model=tmp_path / "none"), f)
    assert c.status == "fail" and "not a directory" in c.detail
    empty = tmp_path / "empty"
    empty.mkdir()
    (c,) = doctor.check_model(_ctx(tmp_path, model=empty), f)
    assert c.status == "fail" and "config.json missing" in c.detail
    # On a node with a role the model is what gets served: other geometry, other KV bytes, a failure.
    other = _model(tmp_path, num_hidden_layers=48)
    (c,) = doctor.check_model(_ctx(tmp_path, model=other, scenario=scen), f)
    assert c.status == "fail" and "num_hidden_layers 48 != 94" in c.detail
    # Without a role (a laptop before the smoke) it stays a warning.
    (c,) = doctor.check_model(_ctx(tmp_path, model=other, scenario=scen, role=None), f)
    assert c.status == "warn" and "num_hidden_layers 48 != 94" in c.detail
    (c,) = doctor.check_dataset(_ctx(tmp_path, dataset=tmp_path / "missing.json"), f)
    assert c.status == "fail" and "downloads" in c.fix
    html = tmp_path / "page.json"
    html.write_text("<html>rate limited</html>")
    (c,) = doctor.check_dataset(_ctx(tmp_path, dataset=html), f)
    assert c.status == "fail" and "JSON list" in c.detail


def test_port_in_use(tmp_path):
    with socket.socket() as s:
        s.bind(("0.0.0.0", 0))
        s.listen()
        port = s.getsockname()[1]
        c = doctor.check_ports_free(_ctx(tmp_path, ports=[(port, "prefill server HTTP")]), doctor.Facts(devices=[]))
    assert c.status == "fail" and f"{port} (prefill server HTTP)" in c.detail


def test_ports_held_by_the_running_stack_pass(tmp_path):
    """`make repro` runs doctor on the decode node with the stack up: its servers hold the ports."""
    import http.server
    import threading

    class Health(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200 if self.path == "/health" else 404)
            self.end_headers()

        def log_message(self, *a):
            pass

    srv = http.server.ThreadingHTTPServer(("0.0.0.0", 0), Health)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        port, other = srv.server_address[1], _free_port()
        c = doctor.check_ports_free(_ctx(tmp_path, ports=[(port, "decode server HTTP"), (other, "router")]),
                                    doctor.Facts(devices=[]))
    finally:
        srv.shutdown()
        srv.server_close()
    assert c.status == "pass", c.detail
    assert f"free: {other}" in c.detail and f"running server answering /health (the stack is up): {port}" in c.detail


@pytest.mark.parametrize("ip,status,word", [("192.168.102.11", "pass", "ens12np0 (mlx5_2)"),
                                            ("127.0.0.1", "warn", "not on an RDMA netdev"),
                                            ("203.0.113.7", "fail", "not an address of this host")])
def test_advertise_ip(tmp_path, bin_dir, ip, status, word):
    h20_node(tmp_path / "sys")
    ctx = _ctx(tmp_path, advertise_ip=ip)
    c = doctor.check_advertise_ip(ctx, doctor.gather(ctx))
    assert c.status == status and word in c.detail


def test_advertise_ip_from_env_or_unset(tmp_path, bin_dir):
    h20_node(tmp_path / "sys")
    ctx = _ctx(tmp_path, env={"SGLANG_HOST_IP": "192.168.100.11"})
    assert doctor.check_advertise_ip(ctx, doctor.gather(ctx)).status == "pass"
    ctx = _ctx(tmp_path)
    c = doctor.check_advertise_ip(ctx, doctor.gather(ctx))
    assert c.status == "warn" and "e.g. 192.168.100.11" in c.fix


def test_saved_sysfs_copy_checks_like_the_original(tmp_path, bin_dir, docker_engine, capsys):
    h20_node(tmp_path / "sys", down=("mlx5_3",))
    docker_engine()
    copy = tmp_path / "copy"
    main(["doctor", "--sysfs-root", str(tmp_path / "sys"), "--json", "--save-sysfs", str(copy)])
    first = capsys.readouterr()
    assert "saved 4 RDMA device(s)" in first.err
    main(["doctor", "--sysfs-root", str(copy), "--json"])
    again, original = json.loads(capsys.readouterr().out), json.loads(first.out)
    # Everything the record says of the node is the same (the PCIe paths' config space was copied too); only the
    # tree read and the time differ.
    differ = {"sysfs_root", "recorded_at"}
    assert {k: v for k, v in again.items() if k not in differ} == {k: v for k, v in original.items() if k not in differ}
    assert all(n["relaxed_ordering"] is True for n in again["nics"])
    assert main(["doctor", "--sysfs-root", str(tmp_path / "sys"), "--save-sysfs", str(copy)]) == 2
    assert "not empty" in capsys.readouterr().err


def test_unreadable_rate_counts_as_zero(tmp_path, bin_dir):
    h20_node(tmp_path / "sys", rate="")
    ctx = _ctx(tmp_path, role=None)
    c = doctor.check_line_rate(ctx, doctor.gather(ctx))
    assert c.status == "warn" and "= 0 Gb/s = 0.00 GB/s" in c.detail
    # A GPU node cannot meet any bandwidth threshold at 0 GB/s: a fail naming the ports.
    node = _ctx(tmp_path)
    c = doctor.check_line_rate(node, doctor.gather(node))
    assert c.status == "fail" and "mlx5_0/1 at an unreadable rate" in c.detail


def test_pinned_gid_index_is_judged_instead_of_the_auto_pick(tmp_path, bin_dir):
    h20_node(tmp_path / "sys")
    auto = doctor.check_gids(_ctx(tmp_path), doctor.gather(_ctx(tmp_path)))
    assert auto.status == "pass" and "Mooncake auto pick" in auto.detail
    # Index 1 is the link-local RoCE v2 GID: pinning it breaks every node-to-node connection.
    ctx = _ctx(tmp_path, env={"MC_GID_INDEX": "1"})
    c = doctor.check_gids(ctx, doctor.gather(ctx))
    assert c.status == "fail" and "pinned by MC_GID_INDEX=1 (environment)" in c.detail, c.detail
    assert "network-degraded" in c.detail and "unset MC_GID_INDEX" in c.fix and "index 3" in c.fix
    # NCCL_IB_GID_INDEX counts when MC_GID_INDEX is unset; the good index passes.
    ctx = _ctx(tmp_path, env={"NCCL_IB_GID_INDEX": "3"})
    c = doctor.check_gids(ctx, doctor.gather(ctx))
    assert c.status == "pass" and "pinned by NCCL_IB_GID_INDEX=3" in c.detail and "192.168.100.11" in c.detail
    # An index past the table, and an out-of-range value the engine ignores.
    ctx = _ctx(tmp_path, env={"MC_GID_INDEX": "9"})
    c = doctor.check_gids(ctx, doctor.gather(ctx))
    assert c.status == "fail" and "index 9 is empty" in c.detail
    ctx = _ctx(tmp_path, env={"MC_GID_INDEX": "300"})
    assert "Mooncake auto pick" in doctor.check_gids(ctx, doctor.gather(ctx)).detail
    # The engine reads the value with atoi: a word is index 0, the IB/RoCE v1 link-local GID.
    ctx = _ctx(tmp_path, env={"MC_GID_INDEX": "auto"})
    c = doctor.check_gids(ctx, doctor.gather(ctx))
    assert c.status == "fail" and "index 0 (roce_v1" in c.detail


def test_advertise_ip_of_a_copied_node_is_not_judged_by_this_hosts_addresses(tmp_path, bin_dir):
    h20_node(tmp_path / "sys")
    ctx = _ctx(tmp_path, advertise_ip="192.168.101.11", dev_dir=None)
    assert doctor.check_advertise_ip(ctx, doctor.gather(ctx)).status == "pass"
    ctx = _ctx(tmp_path, advertise_ip="10.9.9.9", dev_dir=None)
    c = doctor.check_advertise_ip(ctx, doctor.gather(ctx))
    assert c.status == "warn" and "copied node" in c.detail and "192.168.100.11" in c.fix


def test_no_devices_on_a_copied_tree_names_no_none_path(tmp_path, bin_dir):
    (tmp_path / "sys").mkdir()
    ctx = _ctx(tmp_path, dev_dir=None)
    c = doctor.check_dev_infiniband(ctx, doctor.gather(ctx))
    assert "None" not in c.detail
    assert "/dev/infiniband/uverbs*" in c.detail


def test_down_port_fails_by_name_with_a_role(tmp_path, bin_dir):
    h20_node(tmp_path / "sys", down=("mlx5_2",))
    ctx = _ctx(tmp_path)
    f = doctor.gather(ctx)
    c = doctor.check_ports(ctx, f)
    assert c.status == "fail" and "mlx5_2/1" in c.detail
    # Without a role (a laptop) it stays a warning.
    laptop = _ctx(tmp_path, role=None, scenario=None)
    assert doctor.check_ports(laptop, doctor.gather(laptop)).status == "warn"


def test_line_rate_too_low_for_the_scenario_thresholds_fails_naming_the_ports(tmp_path, bin_dir):
    # 3 of 4 ports: 150 GB/s; 147.9 GB/s peak at the published 82.2 % utilization needs ~180 GB/s.
    h20_node(tmp_path / "sys", down=("mlx5_2",))
    ctx = _ctx(tmp_path)
    c = doctor.check_line_rate(ctx, doctor.gather(ctx))
    assert c.status == "fail"
    assert "this node's 150.0 GB/s" in c.detail and "takes 180.0 GB/s of line rate" in c.detail
    assert "mlx5_2/1 DOWN" in c.detail
    # Every port up but negotiated at half rate: 100 GB/s, also short.
    slow = tmp_path / "slow"
    h20_node(slow / "sys", rate="200 Gb/sec (4X HDR)")
    ctx = _ctx(slow)
    c = doctor.check_line_rate(ctx, doctor.gather(ctx))
    assert c.status == "fail" and "100.0 GB/s" in c.detail


def test_extra_port_down_beyond_the_scenarios_nics_only_warns(tmp_path, bin_dir):
    fs = h20_node(tmp_path / "sys")
    from sysfs_builder import roce_gids, switch_chain
    fs.nic("mlx5_bond_mgmt", switch_chain(0, 3), 0, "eno1", gids=roce_gids("eno1", "10.0.0.5", 9),
           rate="25 Gb/sec (1X EDR)", state="1: DOWN", phys_state="3: Disabled")
    ctx = _ctx(tmp_path)
    f = doctor.gather(ctx)
    c = doctor.check_ports(ctx, f)
    assert c.status == "warn" and "mlx5_bond_mgmt/1" in c.detail
    assert doctor.check_line_rate(ctx, f).status == "pass"


def test_the_engine_floor_is_what_the_gpu_stacks_use():
    # The floor exists for start_interval (Engine API 1.44 = Engine 25); the smoke stack must stay below it.
    from pdrepro.fabric.checks.containers import GPU_STACK_MIN_ENGINE

    compose = Path(__file__).resolve().parents[2] / "compose"
    # The GPU stacks' compose files are rendered from the launch targets' templates.
    templates = Path(__file__).resolve().parents[2] / "src/pdrepro/launch/targets/templates"
    gpu = [p for p in templates.glob("compose-*.tmpl") if "driver: nvidia" in p.read_text()]
    assert gpu and all("start_interval" in p.read_text() for p in gpu) and GPU_STACK_MIN_ENGINE == 25
    assert "start_interval" not in (compose / "smoke.yaml").read_text()


@pytest.mark.parametrize(("relaxed", "says"), [
    (False, "disabled on mlx5_0 (off at 0000:1a:00.0)"),
    (None, "unknown on mlx5_0 ("),
])
def test_relaxed_ordering_off_or_unknown_is_a_warning_with_its_fix(tmp_path, relaxed, says):
    h20_node(tmp_path / "sys", relaxed=relaxed)
    ctx = _ctx(tmp_path, env={"MC_IB_PCI_RELAXED_ORDERING": "1"})
    c = _by_name(doctor.run_checks(ctx)[0])["relaxed-ordering"]
    assert c.status == "warn" and says in c.detail
    assert "MC_IB_PCI_RELAXED_ORDERING=1 (environment): on where supported" in c.detail
    assert ("setpci" in c.fix) if relaxed is False else ("as root" in c.fix)


def test_the_knob_unset_is_the_pinned_engines_off(tmp_path):
    h20_node(tmp_path / "sys")
    c = _by_name(doctor.run_checks(_ctx(tmp_path))[0])["relaxed-ordering"]
    assert c.status == "pass" and "MC_IB_PCI_RELAXED_ORDERING unset: the pinned engine leaves relaxed ordering off" \
        in c.detail
