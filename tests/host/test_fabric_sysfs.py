"""Reading RDMA devices from kernel-shaped sysfs trees, and Mooncake's GID pick."""

from __future__ import annotations

from sysfs_builder import FakeSysfs, GidSpec, h20_node, ipv4_gid, link_local_gid, roce_gids, rxe_node, switch_chain

from pdrepro.fabric import gid
from pdrepro.host import sysfs


def _port(tmp_path, gids, link_layer="Ethernet"):
    fs = FakeSysfs(tmp_path)
    fs.nic("mlx5_0", switch_chain(0, 2), 0, "ens10np0", gids=gids, link_layer=link_layer)
    return sysfs.read_rdma_devices(tmp_path)[0].ports[0]


def test_h20_node_devices_ports_and_pci(tmp_path):
    h20_node(tmp_path)
    devs = sysfs.read_rdma_devices(tmp_path)
    assert [d.name for d in devs] == ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"]
    d0 = devs[0]
    assert d0.pci_address == "0000:1a:00.0" and d0.pci_path[0] == "pci0000:15"
    assert d0.numa_node == 0 and devs[3].numa_node == 1
    assert d0.uverbs == "uverbs0" and d0.fw_ver == "28.39.1002"
    port = d0.ports[0]
    assert (port.state, port.phys_state, port.link_layer) == ("ACTIVE", "LinkUp", "Ethernet")
    assert port.rate_Gb_s == 400.0 and port.rate_GB_s == 50.0
    assert port.ndevs == ["ens10np0"]
    assert sysfs.netdev_mtu(tmp_path, "ens10np0") == 9000
    assert sysfs.module_loaded(tmp_path, "nvidia_peermem")


def test_rxe_has_no_pci_parent_and_unknown_numa(tmp_path):
    rxe_node(tmp_path)
    (dev,) = sysfs.read_rdma_devices(tmp_path)
    assert dev.name == "rxe0" and dev.is_virtual and dev.numa_node == -1
    assert dev.ports[0].rate_Gb_s == 10.0


def test_down_port_state_words(tmp_path):
    h20_node(tmp_path, down=("mlx5_2",))
    ports = {d.name: d.ports[0] for d in sysfs.read_rdma_devices(tmp_path)}
    assert not ports["mlx5_2"].is_active and ports["mlx5_2"].state == "DOWN"
    assert ports["mlx5_2"].phys_state == "Disabled"
    assert ports["mlx5_1"].is_active


def test_no_devices(tmp_path):
    assert sysfs.read_rdma_devices(tmp_path) == []
    FakeSysfs(tmp_path)
    assert sysfs.read_rdma_devices(tmp_path) == []


def test_parse_rate_and_bus_id():
    assert sysfs.parse_rate("400 Gb/sec (4X NDR)") == 400.0
    assert sysfs.parse_rate("100 Gb/sec (4X EDR)") == 100.0
    assert sysfs.parse_rate("2.5 Gb/sec (1X SDR)") == 2.5
    assert sysfs.parse_rate("garbage") is None
    assert sysfs.normalize_bus_id("00000000:0F:00.0") == "0000:0f:00.0"


def test_gid_ipv4_and_null():
    g = sysfs.Gid(3, ipv4_gid("192.168.100.11"), "RoCE v2", "ens10np0")
    assert g.ip == "192.168.100.11" and not g.is_null
    assert sysfs.Gid(9, "0000:0000:0000:0000:0000:0000:0000:0000", None, None).is_null


def test_pick_prefers_routable_ipv4_roce_v2(tmp_path):
    port = _port(tmp_path, roce_gids("ens10np0", "192.168.100.11", 0))
    choice = gid.pick(port)
    assert (choice.index, choice.klass, choice.ip, choice.gid_type) == (3, "network-routable", "192.168.100.11", "roce_v2")


def test_private_v4_ranks_below_routable_but_above_link_local(tmp_path):
    gids = roce_gids("ens10np0", "10.0.0.5", 0)  # 0 ll v1, 1 ll v2, 2 v4 v1, 3 v4 v2
    ranked = gid.rank(_port(tmp_path, gids))
    assert [(c.index, c.klass) for c in ranked][:2] == [(3, "network-private-v4"), (1, "network-degraded")]
    assert ranked[0].is_good


def test_docker_netdev_is_degraded_and_lower_index_wins_within_class(tmp_path):
    gids = [GidSpec(ipv4_gid("172.17.0.1"), "RoCE v2", "docker0"),
            GidSpec(link_local_gid(1), "RoCE v2", "ens10np0")]
    ranked = gid.rank(_port(tmp_path, gids))
    assert [c.klass for c in ranked] == ["network-degraded", "network-degraded"]
    assert ranked[0].index == 0 and not ranked[0].is_good


def test_routable_without_netdev_beats_private_with_netdev(tmp_path):
    gids = [GidSpec(ipv4_gid("10.1.1.1"), "RoCE v2", "ens10np0"), GidSpec(ipv4_gid("192.168.5.5"), "RoCE v2", None)]
    assert gid.pick(_port(tmp_path, gids)).index == 1


def test_roce_v1_only_falls_back_to_first_nonzero(tmp_path):
    port = _port(tmp_path, roce_gids("ens10np0", "192.168.100.11", 0, v2=False))
    choice = gid.pick(port)
    assert choice.klass == "fallback-nonzero" and choice.index == 0 and not choice.is_good


def test_infiniband_link_layer_treats_v1_string_as_ib(tmp_path):
    gids = [GidSpec("fe80:0000:0000:0000:b83f:d203:00a1:b2c4", "IB/RoCE v1", None)]
    choice = gid.pick(_port(tmp_path, gids, link_layer="InfiniBand"))
    assert choice.gid_type == "ib" and choice.klass == "no-network-routable"


def test_only_null_gids_gives_no_pick(tmp_path):
    assert gid.pick(_port(tmp_path, [])) is None


def test_capture_copies_what_the_checks_read(tmp_path):
    from pdrepro.fabric.capture import capture
    h20_node(tmp_path / "node")
    summary = capture(tmp_path / "node", tmp_path / "copy")
    assert summary.startswith("4 RDMA device(s), 4 net device(s), 8 GPU(s), modules: nvidia_peermem, mlx5_core")
    assert sysfs.read_rdma_devices(tmp_path / "copy") == sysfs.read_rdma_devices(tmp_path / "node")
    assert (tmp_path / "copy" / "class" / "infiniband" / "mlx5_0").is_symlink()
    assert sysfs.pci_device(tmp_path / "copy", "0000:79:00.0") == sysfs.pci_device(tmp_path / "node", "0000:79:00.0")
    assert sysfs.netdev_mtu(tmp_path / "copy", "ens13np0") == 9000
    assert sysfs.module_loaded(tmp_path / "copy", "nvidia_peermem")


def test_capture_of_this_hosts_sys(tmp_path):
    from pathlib import Path

    from pdrepro.fabric.capture import capture
    capture(Path("/sys"), tmp_path / "copy")
    assert sysfs.read_rdma_devices(tmp_path / "copy") == sysfs.read_rdma_devices(Path("/sys"))
    lo = sysfs.netdev_mtu(Path("/sys"), "lo")
    assert lo is not None and sysfs.netdev_mtu(tmp_path / "copy", "lo") == lo
