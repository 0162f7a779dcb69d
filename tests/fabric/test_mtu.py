"""The RoCE MTU in preflight (doctor fails a published-run node below 4096), in the run's NIC record and in
the payload ceiling, against kernel-shaped sysfs trees and the figures of FACTS.md ("Fabric figures that
bound a goal")."""

from __future__ import annotations

import fakebin
import pytest
from sysfs_builder import h20_node, rxe_node

from pdrepro.cli import main
from pdrepro.core.errors import UserError
from pdrepro.core.roce import FULL_MTU, payload_ceiling_GB_s, roce_mtu
from pdrepro.fabric import doctor
from pdrepro.fabric.checks.rdma import holds_published_run
from pdrepro.host import sysfs
from pdrepro.scenario.model import load_scenario

PUBLISHED = "h20-qwen3-235b-1p1d"
PORT_400G_GB_s = 400 / 8  # one 400GbE port, decimal GB/s


def _ctx(tmp_path, **kw) -> doctor.Context:
    base = dict(sysfs_root=tmp_path / "sys", role="prefill", scenario=load_scenario(PUBLISHED), env={},
                dev_dir=None)
    base.update(kw)
    return doctor.Context(**base)


def _mtu_check(ctx):
    return doctor.check_mtu(ctx, doctor.gather(ctx))


def _set_mtu(root, ndev, mtu):
    (root / "class" / "net" / ndev / "mtu").write_text(f"{mtu}\n")


# The payload ceiling -------------------------------------------------------------------------------------

@pytest.mark.parametrize("mtu,one,four", [(4096, 49.0, 196.1), (1024, 46.3, 185.2)])
def test_payload_ceiling_matches_the_facts(mtu, one, four):
    assert round(payload_ceiling_GB_s(PORT_400G_GB_s, mtu), 1) == one
    assert round(payload_ceiling_GB_s(4 * PORT_400G_GB_s, mtu), 1) == four


def test_the_published_peak_against_raw_and_ceiling():
    published, raw = 164.33, 4 * PORT_400G_GB_s
    assert round(100 * published / raw, 1) == 82.2
    assert round(100 * published / payload_ceiling_GB_s(raw, 4096), 1) == 83.8


def test_a_nonsense_mtu_or_rate_is_refused():
    with pytest.raises(ValueError):
        payload_ceiling_GB_s(50.0, 0)
    with pytest.raises(ValueError):
        payload_ceiling_GB_s(-1.0, 4096)


def test_roce_mtu_from_the_netdev_mtu():
    assert [roce_mtu(m) for m in (1500, 4000, 4192, 4191, 9000, 300)] == [1024, 2048, 4096, 2048, 4096, 0]


# Which scenarios hold a published run --------------------------------------------------------------------

@pytest.mark.parametrize("name,published", [("h20-qwen3-235b-1p1d", True), ("h20-qwen3-235b-2p2d", True),
                                            ("onebox-qwen25-0.5b", False), ("smoke-tcp", False),
                                            ("a10-qwen25-7b-rate1", False)])
def test_published_run_rule(name, published):
    assert holds_published_run(load_scenario(name)) is published


# doctor ---------------------------------------------------------------------------------------------------

def test_published_node_below_4096_fails_naming_port_mtu_and_fix(tmp_path):
    h20_node(tmp_path / "sys", mtu=1500)
    c = _mtu_check(_ctx(tmp_path))
    assert c.status == "fail"
    for port in ("mlx5_0/1", "mlx5_3/1"):
        assert port in c.detail
    assert "ens10np0 MTU 1500 -> RoCE MTU 1024, below 4096" in c.detail
    assert "payload ceiling 46.3 GB/s instead of 49.0" in c.detail
    assert "mtu 9000" in c.fix and "switch" in c.fix
    assert "\n" not in c.detail + c.fix


def test_one_port_below_fails_alone(tmp_path):
    h20_node(tmp_path / "sys")
    _set_mtu(tmp_path / "sys", "ens12np0", 4000)
    c = _mtu_check(_ctx(tmp_path))
    assert c.status == "fail" and "mlx5_2/1: ens12np0 MTU 4000 -> RoCE MTU 2048" in c.detail
    assert "mlx5_0/1" not in c.detail and "ens12np0 mtu 9000" in c.fix


def test_full_mtu_passes(tmp_path):
    h20_node(tmp_path / "sys", mtu=4200)
    c = _mtu_check(_ctx(tmp_path))
    assert c.status == "pass" and c.detail.count(f"RoCE MTU {FULL_MTU}") == 4


@pytest.mark.parametrize("kw", [dict(scenario=load_scenario("onebox-qwen25-0.5b")), dict(scenario=None),
                                dict(role=None)])
def test_other_scenarios_and_laptops_keep_the_warning(tmp_path, kw):
    h20_node(tmp_path / "sys", mtu=1500)
    c = _mtu_check(_ctx(tmp_path, **kw))
    assert c.status == "warn" and "RoCE MTU 1024" in c.detail and "mtu 9000" in c.fix


@pytest.mark.parametrize("filters,status", [("mlx5_0,mlx5_1", "warn"), ("mlx5_1, mlx5_2", "fail"), ("", "fail")])
def test_only_ports_the_engine_may_use_fail(tmp_path, filters, status):
    h20_node(tmp_path / "sys")
    _set_mtu(tmp_path / "sys", "ens12np0", 1500)
    c = _mtu_check(_ctx(tmp_path, env={"MC_TE_FILTERS": filters}))
    assert c.status == status and "mlx5_2/1" in c.detail


def test_doctor_cli_exits_1_on_a_published_node_with_small_mtu(tmp_path, monkeypatch, capsys):
    fakebin.first_on_path(tmp_path / "bin", monkeypatch)
    h20_node(tmp_path / "sys", mtu=1500)
    rc = main(["doctor", "--sysfs-root", str(tmp_path / "sys"), "--role", "prefill", "--scenario", PUBLISHED])
    out = capsys.readouterr().out
    assert rc == 1
    assert "FAIL  mtu" in out and "RoCE MTU 1024" in out and "mtu 9000" in out


# An MTU that is no number is not measured ----------------------------------------------------------------

@pytest.mark.parametrize("content", ["jumbo", "", "9000 bytes", "0x2328", "-"])
def test_an_unreadable_mtu_fails_a_published_run_node(tmp_path, content):
    h20_node(tmp_path / "sys")
    (tmp_path / "sys" / "class" / "net" / "ens11np0" / "mtu").write_text(content)
    c = _mtu_check(_ctx(tmp_path))
    assert c.status == "fail"
    assert "mlx5_1/1: netdev MTU not measured" in c.detail and "ens11np0/mtu" in c.detail
    assert "mlx5_0/1: ens10np0 MTU 9000 -> RoCE MTU 4096" in c.detail
    assert "/sys/class/net/<netdev>/mtu" in c.fix


def test_an_mtu_file_that_is_a_folder_never_passes(tmp_path):
    # A folder where the kernel shows a file is no sysfs tree the kernel made: the one capped reader refuses it in
    # one line (as a FIFO), rather than read it as an MTU.
    h20_node(tmp_path / "sys")
    mtu = tmp_path / "sys" / "class" / "net" / "ens10np0" / "mtu"
    mtu.unlink()
    mtu.mkdir()
    with pytest.raises(UserError, match="is a directory, not a regular file"):
        _mtu_check(_ctx(tmp_path))


@pytest.mark.parametrize("kw", [dict(scenario=load_scenario("onebox-qwen25-0.5b")), dict(scenario=None),
                                dict(role=None)])
def test_an_unreadable_mtu_warns_where_no_scenario_requires_it(tmp_path, kw):
    h20_node(tmp_path / "sys")
    (tmp_path / "sys" / "class" / "net" / "ens12np0" / "mtu").write_text("jumbo\n")
    c = _mtu_check(_ctx(tmp_path, **kw))
    assert c.status == "warn" and "mlx5_2/1: netdev MTU not measured" in c.detail


def test_an_unreadable_mtu_on_a_port_the_engine_does_not_use_keeps_the_pass(tmp_path):
    h20_node(tmp_path / "sys")
    (tmp_path / "sys" / "class" / "net" / "ens12np0" / "mtu").write_text("jumbo\n")
    c = _mtu_check(_ctx(tmp_path, env={"MC_TE_FILTERS": "mlx5_0,mlx5_1"}))
    assert c.status == "pass" and "mlx5_2/1: netdev MTU not measured" in c.detail


def test_doctor_cli_exits_1_on_a_published_node_whose_mtu_reads_jumbo(tmp_path, monkeypatch, capsys):
    fakebin.first_on_path(tmp_path / "bin", monkeypatch)
    h20_node(tmp_path / "sys")
    (tmp_path / "sys" / "class" / "net" / "ens13np0" / "mtu").write_text("jumbo\n")
    rc = main(["doctor", "--sysfs-root", str(tmp_path / "sys"), "--role", "prefill", "--scenario", PUBLISHED])
    out = capsys.readouterr().out
    assert rc == 1
    assert "FAIL  mtu" in out and "mlx5_3/1: netdev MTU not measured" in out


# The run's NIC record -------------------------------------------------------------------------------------

@pytest.mark.parametrize("mtu,want", [(1500, 1024), (9000, 4096), (4000, 2048)])
def test_the_nic_record_carries_each_roce_port_mtu(tmp_path, mtu, want):
    h20_node(tmp_path / "sys", mtu=mtu)
    nics = sysfs.nic_inventory(tmp_path / "sys" / "class" / "infiniband")
    assert sorted(nics) == ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"]
    for i, name in enumerate(sorted(nics)):
        port = nics[name]["ports"]["1"]
        assert port["netdev"] == f"ens{10 + i}np0"
        assert (port["netdev_mtu"], port["roce_mtu"]) == (mtu, want)


def test_the_nic_record_of_soft_roce_and_of_a_missing_netdev(tmp_path):
    rxe_node(tmp_path / "sys")
    port = sysfs.nic_inventory(tmp_path / "sys" / "class" / "infiniband")["rxe0"]["ports"]["1"]
    assert (port["netdev"], port["netdev_mtu"], port["roce_mtu"]) == ("eth0", 1500, 1024)
    # A container sees the port but not its host's netdev: the MTU is unknown, not guessed.
    (tmp_path / "sys" / "class" / "net" / "eth0").unlink()
    port = sysfs.nic_inventory(tmp_path / "sys" / "class" / "infiniband")["rxe0"]["ports"]["1"]
    assert (port["netdev"], port["netdev_mtu"], port["roce_mtu"]) == ("eth0", None, None)


def test_an_infiniband_port_records_no_roce_mtu(tmp_path):
    h20_node(tmp_path / "sys", link_layer="InfiniBand")
    port = sysfs.nic_inventory(tmp_path / "sys" / "class" / "infiniband")["mlx5_0"]["ports"]["1"]
    assert "roce_mtu" not in port and port["link_layer"] == "InfiniBand"
