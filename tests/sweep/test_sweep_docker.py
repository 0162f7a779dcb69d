"""The product's Docker launcher and log source against the real engine,
with the smoke image standing in for the GPU image (both have python3)."""

import logging
import time
import uuid

import pytest
from fakecluster import mooncake_startup
from smokeimage import smoke_image

import docker
from pdrepro.rundir import RunDir
from pdrepro.sweep.benchclient import DockerLauncher, LengthTimeout
from pdrepro.sweep.logsource import DockerLogSource

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def image():
    return smoke_image()


def test_runs_argv_with_mounts_host_network_and_relays_progress(tmp_path, image, caplog):
    out = tmp_path / "run"
    out.mkdir()
    data = tmp_path / "data.json"
    data.write_text("[1, 2, 3]")
    script = ("import json, sys, socket; "
              f"n = len(json.load(open('{data}'))); "
              "sys.stdout.write('  0%|  | 0/3\\r 33%|# | 1/3\\r100%|##| 3/3\\n'); "
              f"open('{out}/result.jsonl', 'w').write(json.dumps({{'completed': n, 'host': socket.gethostname()}}) + '\\n')")
    caplog.set_level(logging.INFO, logger="pdrepro")
    launcher = DockerLauncher(image, env={"MC_TE_METRIC": "1"})
    t0 = time.monotonic()
    rc = launcher.run(["python3", "-c", script], mounts={out: True, data: False}, timeout_s=120)
    assert rc == 0
    # The client's own run time, from the engine: positive, shorter than the whole call.
    assert 0 < launcher.last_client_s < time.monotonic() - t0
    assert '"completed": 3' in (out / "result.jsonl").read_text()
    lines = caplog.messages
    assert any("33%" in line for line in lines) and any("3/3" in line for line in lines)


def test_read_only_mount_and_exit_status(tmp_path, image):
    data = tmp_path / "ro"
    data.mkdir()
    rc = DockerLauncher(image).run(["python3", "-c", f"open('{data}/x', 'w')"], mounts={data: False},
                                   timeout_s=120)
    assert rc == 1
    assert not (data / "x").exists()


def test_timeout_stops_and_removes_the_container(tmp_path, image):
    prefix = f"pdrepro-test-{uuid.uuid4().hex[:8]}"
    launcher = DockerLauncher(image, name_prefix=prefix)
    with pytest.raises(LengthTimeout):
        launcher.run(["sleep", "60"], mounts={}, timeout_s=2)
    left = docker.from_env().containers.list(all=True, filters={"name": prefix})
    assert left == []


def test_missing_image_is_a_user_error(tmp_path, image):
    from pdrepro.core.errors import UserError

    with pytest.raises(UserError, match="make build"):
        DockerLauncher(f"pdrepro-no-such-image:{uuid.uuid4().hex[:8]}").run(["true"], mounts={}, timeout_s=10)


def test_docker_log_source_reads_named_containers(tmp_path, image):
    client = docker.from_env()
    name = f"pdrepro-test-prefill-{uuid.uuid4().hex[:8]}"
    text = "\n".join(mooncake_startup("rdma", nics=2))
    container = client.containers.run(image, ["bash", "-c", f"cat <<'EOF'\n{text}\nEOF"], name=name, detach=True,
                                      environment={"MC_GID_INDEX": "3", "NCCL_IB_HCA": "mlx5_0", "HOME_X": "1"})
    try:
        container.wait(timeout=60)
        source = DockerLogSource({"prefill": name, "decode": f"{name}-absent"}, client=client)
        assert "installTransport, type=rdma" in source.text("prefill")
        assert source.text("decode") is None
        copied = source.copy_to(RunDir(tmp_path))
        assert [p.name for p in copied] == ["prefill.log"]
        facts = source.containers()["prefill"]
        assert sorted(facts["env"]) == ["MC_GID_INDEX=3", "NCCL_IB_HCA=mlx5_0"]
        assert facts["image_id"].startswith("sha256:")
        # Logs read from a folder still record the local containers' image and environment.
        from pdrepro.sweep.logsource import DirLogSource

        folder = DirLogSource(tmp_path, {"decode": name, "router": f"{name}-absent"}).containers()
        assert list(folder) == ["decode"] and folder["decode"]["image_id"] == facts["image_id"]
    finally:
        container.remove(force=True)


def test_server_container_reports_its_node(tmp_path, image):
    """The prefill server runs on the other node: its kernel and host come from inside its container."""
    import platform
    import socket

    client = docker.from_env()
    name = f"pdrepro-test-node-{uuid.uuid4().hex[:8]}"
    container = client.containers.run(image, ["sleep", "60"], name=name, detach=True, network_mode="host")
    try:
        facts = DockerLogSource({"prefill": name}, client=client).containers()["prefill"]["node"]
        assert facts["kernel"] == platform.release()
        assert facts["hostname"] == socket.gethostname()  # host network: the node's own name
        assert "driver" not in facts  # no nvidia-smi in this image: nothing claimed
        assert "exit_status" not in facts
    finally:
        container.remove(force=True)
    from pdrepro.sweep.logsource import node_facts

    assert "could not run" in node_facts(container)["error"]


def test_node_facts_read_driver_cuda_and_nic_rates():
    from pdrepro.sweep.logsource import node_facts

    class Running:
        name = "pdrepro-prefill"

        def exec_run(self, argv):
            assert argv[:2] == ["sh", "-c"]
            return 0, (b"kernel=5.15.0-119-generic\nhostname=h20-a\ndriver=570.133.20\ncuda=12.9\n"
                       b"nic.mlx5_0.fw_ver=28.43.2026\nnic.mlx5_0.port.1=400 Gb/sec (4X NDR)\n"
                       b"nic.mlx5_1.fw_ver=28.43.2026\nnic.mlx5_1.port.1=400 Gb/sec (4X NDR)\n")

    facts = node_facts(Running())
    assert facts["driver"] == "570.133.20" and facts["cuda"] == "12.9" and facts["hostname"] == "h20-a"
    assert facts["nics"]["mlx5_1"] == {"fw_ver": "28.43.2026", "ports": {"1": {"rate": "400 Gb/sec (4X NDR)"}}}


def test_prefill_counters_are_read_inside_its_container(tmp_path, image):
    """The NIC witness reads the other node's port counters through the engine that holds its server."""
    from sysfs_builder import h20_node

    from pdrepro.fabric.counters import read_ports
    from pdrepro.sweep.counters import CounterReader

    node = h20_node(tmp_path / "prefill-node")
    node.traffic("mlx5_2", sent=12 * 2**30)
    ib = tmp_path / "prefill-node" / "class" / "infiniband"
    client = docker.from_env()
    name = f"pdrepro-test-counters-{uuid.uuid4().hex[:8]}"
    # The tree, mounted at its own path (its links are relative), stands in for the node's
    # /sys/class/infiniband; IB_ROOT points the script at it.
    container = client.containers.run(image, ["sleep", "60"], name=name, detach=True,
                                      environment={"IB_ROOT": str(ib)},
                                      volumes={str(tmp_path): {"bind": str(tmp_path), "mode": "ro"}})
    try:
        reading = CounterReader(tmp_path / "no-sysfs", DockerLogSource({"prefill": name}, client=client)).read()
        assert reading["prefill"]["ports"] == read_ports(ib)
        assert reading["prefill"]["ports"]["mlx5_2/1"]["port_xmit_data"] == 12 * 2**30 // 4
        assert name in reading["prefill"]["source"]
        assert "no RDMA port counters" in reading["decode"]["error"]
    finally:
        container.remove(force=True)
    gone = CounterReader(tmp_path, DockerLogSource({"prefill": name}, client=client)).read()["prefill"]
    assert "not read" in gone["error"] and "not found" in gone["error"]
