"""pdrepro ib-devices: nearest NIC per GPU from nvidia-smi topo and sysfs."""

from __future__ import annotations

import json

import fakebin
import pytest
from sysfs_builder import h20_node

from pdrepro.cli import main
from pdrepro.fabric import affinity
from pdrepro.host import nvidia, sysfs

TOPO = fakebin.served(fakebin.FIXTURES / "nvidia-smi" / "h20-topo-m.txt")
EXPECTED = {"0": "mlx5_0", "1": "mlx5_0", "2": "mlx5_1", "3": "mlx5_1",
            "4": "mlx5_2", "5": "mlx5_2", "6": "mlx5_3", "7": "mlx5_3"}

OLD_STYLE_TOPO = (
    "\tGPU0\tGPU1\tmlx5_0\tmlx5_1\tCPU Affinity\tNUMA Affinity\n"
    "GPU0\t X \tNV12\tPXB\tSYS\t0-31\t0\n"
    "GPU1\tNV12\t X \tSYS\tPXB\t32-63\t1\n"
    "mlx5_0\tPXB\tSYS\t X \tSYS\n"
    "mlx5_1\tSYS\tPXB\tSYS\t X \n"
    "\nLegend:\n\n  X    = Self\n"
)


@pytest.fixture
def bin_dir(tmp_path, monkeypatch):
    return fakebin.first_on_path(tmp_path / "bin", monkeypatch)


def test_parse_topo_with_nic_legend():
    topo = nvidia.parse_topo(TOPO)
    assert topo.nics == ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"]
    assert topo.gpu_to_nic[0] == {"mlx5_0": "PIX", "mlx5_1": "NODE", "mlx5_2": "SYS", "mlx5_3": "SYS"}
    assert topo.gpu_to_nic[5]["mlx5_2"] == "PIX"
    assert len(topo.gpu_to_nic) == 8


def test_parse_topo_with_device_names_in_header():
    topo = nvidia.parse_topo(OLD_STYLE_TOPO)
    assert topo.gpu_to_nic == {0: {"mlx5_0": "PXB", "mlx5_1": "SYS"}, 1: {"mlx5_0": "SYS", "mlx5_1": "PXB"}}


def test_parse_topo_rejects_other_text():
    with pytest.raises(ValueError):
        nvidia.parse_topo("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.")


def test_writes_map_from_nvidia_smi(tmp_path, bin_dir, capsys):
    h20_node(tmp_path / "sys")
    fakebin.nvidia_smi(bin_dir)
    out = tmp_path / "ib_devices.json"
    assert main(["ib-devices", "--sysfs-root", str(tmp_path / "sys"), "--out", str(out)]) == 0
    assert json.loads(out.read_text()) == EXPECTED
    text = capsys.readouterr().out
    assert "GPU0 -> mlx5_0: PIX (same PCIe switch, one bridge, from nvidia-smi topo)" in text
    assert f"--disaggregation-ib-device {out.resolve()} " in text


def test_out_must_end_in_json_for_sglang_to_read_it_as_a_file(tmp_path, bin_dir, capsys):
    h20_node(tmp_path / "sys")
    fakebin.nvidia_smi(bin_dir)
    out = tmp_path / "ib_devices.txt"
    assert main(["ib-devices", "--sysfs-root", str(tmp_path / "sys"), "--out", str(out)]) == 2
    assert "must end in .json" in capsys.readouterr().err
    assert not out.exists()


def test_sysfs_gives_the_same_answer_without_topo(tmp_path, bin_dir, capsys):
    h20_node(tmp_path / "sys")
    fakebin.nvidia_smi(bin_dir, fail_topo=True)
    out = tmp_path / "m.json"
    assert main(["ib-devices", "--sysfs-root", str(tmp_path / "sys"), "--out", str(out), "--from-sysfs"]) == 0
    assert json.loads(out.read_text()) == EXPECTED
    assert "from sysfs" in capsys.readouterr().out


def test_sysfs_links_between_gpu_and_nics(tmp_path):
    h20_node(tmp_path)
    nics = {d.name: d for d in sysfs.read_rdma_devices(tmp_path)}
    path, numa = sysfs.pci_device(tmp_path, "0000:18:00.0")
    assert affinity.sysfs_link(path, numa, nics["mlx5_0"]) == "PIX"
    assert affinity.sysfs_link(path, numa, nics["mlx5_1"]) == "NODE"
    assert affinity.sysfs_link(path, numa, nics["mlx5_3"]) == "SYS"


def test_down_nic_is_skipped_and_gpus_spread_over_ties(tmp_path, bin_dir, capsys):
    h20_node(tmp_path / "sys", down=("mlx5_0",))
    fakebin.nvidia_smi(bin_dir)
    out = tmp_path / "m.json"
    assert main(["ib-devices", "--sysfs-root", str(tmp_path / "sys"), "--out", str(out)]) == 0
    m = json.loads(out.read_text())
    assert "mlx5_0" not in m.values()
    # GPU0/1 lost their switch-local NIC; the nearest left is mlx5_1 (same NUMA node)
    assert m["0"] == "mlx5_1" and m["1"] == "mlx5_1"
    assert "skipped (no ACTIVE port): mlx5_0" in capsys.readouterr().out


def test_ties_are_spread_evenly():
    gpus = [nvidia.Gpu(i, "NVIDIA H20", f"00000000:{i:02X}:00.0") for i in range(4)]
    topo = nvidia.Topology({i: {"mlx5_0": "NODE", "mlx5_1": "NODE"} for i in range(4)})
    nics = [sysfs.RdmaDevice("mlx5_0", None, ("pci0000:00",), 0), sysfs.RdmaDevice("mlx5_1", None, ("pci0000:00",), 0)]
    placed = affinity.place(gpus, nics, topo, root=None)
    assert [p.nic for p in placed] == ["mlx5_0", "mlx5_1", "mlx5_0", "mlx5_1"]


def test_errors_name_the_fix(tmp_path, bin_dir, capsys):
    h20_node(tmp_path / "sys")
    assert main(["ib-devices", "--sysfs-root", str(tmp_path / "sys"), "--out", str(tmp_path / "x.json")]) == 2
    assert "nvidia-smi not found" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    fakebin.nvidia_smi(bin_dir)
    assert main(["ib-devices", "--sysfs-root", str(tmp_path / "empty"), "--out", str(tmp_path / "x.json")]) == 2
    assert "no RDMA device with an ACTIVE port" in capsys.readouterr().err
    assert not (tmp_path / "x.json").exists()


def test_topo_and_query_as_recorded_on_a_real_gpu_node():
    # Recorded from nvidia-smi (driver 580) on a single-GPU H200 machine without
    # RDMA NICs: the header carries terminal underline escapes even in a file.
    recorded = fakebin.RECORDED / "nvidia-smi"
    raw = fakebin.served(recorded / "h200-topo-m.txt")
    assert "\x1b[4m" in raw
    topo = nvidia.parse_topo(raw)
    assert topo.gpu_to_nic == {0: {}} and topo.nics == []
    gpus = nvidia.parse_gpu_query(fakebin.served(recorded / "h200-query-gpu.csv"))
    assert [(g.index, g.name, g.bus_id) for g in gpus] == [(0, "NVIDIA H200", "00000000:00:06.0")]


def test_a_second_server_on_the_node_gets_keys_from_zero(tmp_path, bin_dir, capsys):
    """SGLang numbers the GPUs it is given from 0; the map's keys must follow, not nvidia-smi's ids."""
    h20_node(tmp_path / "sys")
    fakebin.nvidia_smi(bin_dir)
    out = tmp_path / "decode.json"
    assert main(["ib-devices", "--sysfs-root", str(tmp_path / "sys"), "--out", str(out), "--gpus", "4,5,6,7"]) == 0
    assert json.loads(out.read_text()) == {"0": "mlx5_2", "1": "mlx5_2", "2": "mlx5_3", "3": "mlx5_3"}
    printed = capsys.readouterr().out
    assert "GPU4 -> mlx5_2: PIX" in printed and printed.split("GPU4 -> ")[1].splitlines()[0].endswith("(key 0)")
    assert main(["ib-devices", "--sysfs-root", str(tmp_path / "sys"), "--out", str(out), "--gpus", "4,12"]) == 2
    assert "GPU 12 is not on this node" in capsys.readouterr().err
    assert main(["ib-devices", "--sysfs-root", str(tmp_path / "sys"), "--out", str(out), "--gpus", "4,x"]) == 2
    assert "comma list" in capsys.readouterr().err


def test_written_map_is_one_render_accepts(tmp_path, bin_dir):
    from pdrepro.scenario.site import check_ib_devices

    h20_node(tmp_path / "sys")
    fakebin.nvidia_smi(bin_dir)
    out = tmp_path / "ib_devices.json"
    assert main(["ib-devices", "--sysfs-root", str(tmp_path / "sys"), "--out", str(out)]) == 0
    check_ib_devices(out, 8)
    assert all(k.isascii() and k.isdigit() for k in json.loads(out.read_text()))


@pytest.mark.parametrize("key", ["default", "*"])
def test_a_key_sglang_refuses_is_never_written(tmp_path, bin_dir, capsys, monkeypatch, key):
    from pdrepro.commands import ib_devices

    monkeypatch.setattr(ib_devices, "build_map", lambda root, wanted=None, **_: ({"0": "mlx5_0", key: "mlx5_1"}, []))
    out = tmp_path / "ib_devices.json"
    assert main(["ib-devices", "--sysfs-root", str(tmp_path), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"key {key!r} is not a GPU id" in err[0]
    assert not out.exists()
