"""scripts/softroce.sh: usage, the message where the kernel has no rxe, idempotence.

`rdma` and `modprobe` are replaced on PATH where a test must not change the
host; SYSFS_ROOT points the script at a kernel-shaped tree.
"""

from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path

import fakebin
import pytest
from sysfs_builder import FakeSysfs, rxe_node

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "softroce.sh"


def _run(*args, env=None):
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=60)


@pytest.fixture
def host(tmp_path):
    """A PATH with recording `rdma`, root `id`, and a sysfs tree with eth0."""
    bin_dir = tmp_path / "bin"
    log = tmp_path / "rdma.log"
    fakebin.install(bin_dir, "rdma", f'echo "$*" >> {log}\n')
    fakebin.install(bin_dir, "id", 'echo 0\n')
    sys_root = tmp_path / "sys"
    FakeSysfs(sys_root).netdev("eth0", 1500)
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}", SYSFS_ROOT=str(sys_root))
    return env, bin_dir, log, sys_root


@pytest.mark.parametrize("args", [(), ("bogus",), ("down", "extra"), ("status", "x"), ("up", "a", "b")])
def test_usage_errors(args):
    res = _run(*args)
    assert res.returncode == 2 and "usage:" in res.stderr


def test_help():
    res = _run("--help")
    assert res.returncode == 0 and "rdma_rxe" in res.stdout


def test_up_explains_a_kernel_without_rxe(host):
    env, bin_dir, log, _ = host
    fakebin.install(bin_dir, "modprobe",
                    'echo "modprobe: FATAL: Module rdma_rxe not found in directory /lib/modules/$(uname -r)" >&2; exit 1\n')
    res = _run("up", "eth0", env=env)
    assert res.returncode == 1
    assert "softroce: cannot load rdma_rxe:" in res.stderr
    assert "without soft-RoCE the smoke test still runs, over TCP" in res.stderr
    assert not log.exists()


def test_up_on_this_machine(host):
    """The real modprobe: here the kernel has no rxe, elsewhere rxe0 gets added (through the recording rdma)."""
    env, _, log, _ = host
    res = _run("up", "eth0", env=env)
    kernel = platform.release()
    if not Path(f"/lib/modules/{kernel}").is_dir() and not Path("/sys/module/rdma_rxe").exists():
        assert res.returncode == 1
        assert f"kernel {kernel} has no loadable modules here" in res.stderr
        assert "CONFIG_RDMA_RXE" in res.stderr
        assert not log.exists()
    else:
        assert res.returncode == 0, res.stderr
        assert log.read_text().splitlines() == ["link add rxe0 type rxe netdev eth0"]


def test_up_adds_rxe_on_the_named_interface(host):
    env, bin_dir, log, _ = host
    fakebin.install(bin_dir, "modprobe", "exit 0\n")
    res = _run("up", "eth0", env=env)
    assert res.returncode == 0, res.stderr
    assert log.read_text().splitlines() == ["link add rxe0 type rxe netdev eth0"]
    assert "adding rxe0 on eth0" in res.stdout


def test_up_refuses_an_unknown_interface(host):
    env, *_ = host
    res = _run("up", "wlp0s20f3", env=env)
    assert res.returncode == 1 and "no network interface 'wlp0s20f3'" in res.stderr


def test_up_and_down_are_idempotent(tmp_path, host):
    env, bin_dir, log, _ = host
    rxe_node(tmp_path / "withrxe")
    env = dict(env, SYSFS_ROOT=str(tmp_path / "withrxe"))
    res = _run("up", env=env)
    assert res.returncode == 0 and "rxe0 already exists on eth0" in res.stdout
    assert not log.exists()
    res = _run("down", env=env)
    assert res.returncode == 0 and log.read_text().splitlines() == ["link delete rxe0"]
    res = _run("down", env=dict(env, SYSFS_ROOT=str(tmp_path / "sys")))
    assert res.returncode == 0 and "nothing to do" in res.stdout


def test_status_shows_ports_and_gids(tmp_path, host):
    env, *_ = host
    rxe_node(tmp_path / "withrxe")
    res = _run("status", env=dict(env, SYSFS_ROOT=str(tmp_path / "withrxe")))
    assert res.returncode == 0
    assert "port 1: state 4: ACTIVE, phys 5: LinkUp, rate 10 Gb/sec (4X SDR), Ethernet" in res.stdout
    assert "gid 3: 0000:0000:0000:0000:0000:ffff:c0a8:0114 RoCE v2 on eth0" in res.stdout
    assert "memlock limit:" in res.stdout
    res = _run("status", env=env)
    assert "no RDMA devices" in res.stdout
