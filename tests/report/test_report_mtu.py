"""The report holds the peak against the raw line rate and the payload ceiling of the RoCE MTU the run
recorded (provenance.json host.nics, as the sweep writes it from a kernel-shaped sysfs tree), and says so
when the run recorded none."""

from __future__ import annotations

import pytest
from runbuilder import build_run, sweep_provenance
from sysfs_builder import h20_node

from pdrepro.analysis.summarize import compute_summary
from pdrepro.core.errors import UserError
from pdrepro.host import sysfs
from pdrepro.report.markdown import render_report
from pdrepro.scenario.model import load_scenario

SCENARIO = load_scenario("h20-qwen3-235b-1p1d")


def _fabric_line(tmp_path, nics) -> str:
    prov = sweep_provenance(SCENARIO)
    if nics is not None:
        prov["host"]["nics"] = nics
    report = render_report(compute_summary(build_run(tmp_path / "r", SCENARIO, provenance=prov), SCENARIO))
    lines = [x for x in report.splitlines() if x.startswith("- Against the fabric:")]
    assert len(lines) == 1
    return lines[0]


def _recorded_nics(tmp_path, mtu: int) -> dict:
    """The NIC record the sweep writes on an H20 node whose RDMA netdevs have MTU ``mtu``."""
    h20_node(tmp_path / "sys", mtu=mtu)
    return sysfs.nic_inventory(tmp_path / "sys" / "class" / "infiniband")


@pytest.mark.parametrize("mtu,ceiling,share", [(9000, "196.1", "83.8"), (1500, "185.2", "88.7")])
def test_the_peak_against_raw_and_the_recorded_mtus_ceiling(tmp_path, mtu, ceiling, share):
    line = _fabric_line(tmp_path, _recorded_nics(tmp_path, mtu))
    roce = 4096 if mtu == 9000 else 1024
    assert "82.2 % of the raw 200 GB/s line rate" in line
    assert f"{share} % of the {ceiling} GB/s payload ceiling at RoCE MTU {roce} on every active RoCE port" in line


def test_ports_that_differ_are_held_to_the_lowest(tmp_path):
    nics = _recorded_nics(tmp_path, 9000)
    nics["mlx5_2"]["ports"]["1"].update(netdev_mtu=1500, roce_mtu=1024)
    line = _fabric_line(tmp_path, nics)
    assert "the lowest RoCE MTU on node-b, 1024" in line and "mlx5_2/1 1024" in line and "185.2 GB/s" in line


def test_a_down_port_does_not_set_the_ceiling(tmp_path):
    nics = _recorded_nics(tmp_path, 9000)
    nics["mlx5_2"]["ports"]["1"].update(state="1: DOWN", netdev_mtu=1500, roce_mtu=1024)
    assert "196.1 GB/s payload ceiling at RoCE MTU 4096" in _fabric_line(tmp_path, nics)


@pytest.mark.parametrize("nics,says", [
    (None, "the run recorded no RDMA ports (provenance.json host.nics), so no RoCE MTU and no payload ceiling"),
    ({}, "the run recorded no active RoCE port on node-b"),
    # A run recorded before the MTU was: its ports carry the raw words only.
    ({"mlx5_0": {"fw_ver": "28.39.1002", "board_id": None, "ports": {"1": {
        "rate": "400 Gb/sec (4X NDR)", "state": "4: ACTIVE", "link_layer": "Ethernet"}}}},
     "the run recorded no RoCE MTU for mlx5_0/1 on node-b"),
])
def test_no_recorded_mtu_is_said_not_guessed(tmp_path, nics, says):
    line = _fabric_line(tmp_path, nics)
    assert "82.2 % of the raw 200 GB/s line rate" in line and says in line
    assert "payload ceiling at" not in line


@pytest.mark.parametrize("bad", [1000, 0, "4096", -4096, True])
def test_a_recorded_mtu_that_no_port_can_have_is_refused_in_one_line(tmp_path, bad):
    nics = _recorded_nics(tmp_path, 9000)
    nics["mlx5_0"]["ports"]["1"]["roce_mtu"] = bad
    with pytest.raises(UserError) as err:
        _fabric_line(tmp_path, nics)
    assert "\n" not in str(err.value) and "roce_mtu" in str(err.value)
