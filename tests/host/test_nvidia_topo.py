"""`nvidia-smi topo -m` as people paste it (spaces for tabs) and as nvidia-smi writes it (underline
escapes around the header), from recorded outputs; and ib-devices never guessing silently."""

from __future__ import annotations

import json

import fakebin
import pytest
from sysfs_builder import h20_node

from pdrepro.cli import main
from pdrepro.host import nvidia

RECORDED = fakebin.RECORDED / "nvidia-smi"
H20_TOPO = fakebin.served(fakebin.FIXTURES / "nvidia-smi" / "h20-topo-m.txt")
EXPECTED = {"0": "mlx5_0", "1": "mlx5_0", "2": "mlx5_1", "3": "mlx5_1",
            "4": "mlx5_2", "5": "mlx5_2", "6": "mlx5_3", "7": "mlx5_3"}


def test_space_separated_paste_with_device_names_in_the_header():
    topo = nvidia.parse_topo((RECORDED / "topo-m-spaces-nccl-tests-78.txt").read_text())
    assert sorted(topo.gpu_to_nic) == [0, 1, 2, 3]
    assert topo.nics == [f"mlx5_{i}" for i in range(10)]
    assert topo.gpu_to_nic[0] == {"mlx5_0": "PIX", "mlx5_1": "PXB", "mlx5_2": "NODE", "mlx5_3": "NODE",
                                  **{f"mlx5_{i}": "SYS" for i in range(4, 10)}}
    assert topo.gpu_to_nic[3]["mlx5_1"] == "PIX"


def test_space_separated_paste_with_nic_columns():
    topo = nvidia.parse_topo((RECORDED / "topo-m-spaces-sglang-13973.txt").read_text())
    assert sorted(topo.gpu_to_nic) == [0, 1, 2, 3, 4, 5]
    assert topo.nics == [f"NIC{i}" for i in range(9)]
    assert topo.gpu_to_nic[3] == {"NIC0": "SYS", "NIC1": "SYS", "NIC2": "SYS", "NIC3": "NODE", "NIC4": "PIX",
                                  "NIC5": "SYS", "NIC6": "SYS", "NIC7": "SYS", "NIC8": "SYS"}


def test_recorded_output_with_tabs_expanded_parses_the_same():
    # The same recorded output after a terminal or editor turned its tabs into spaces, escapes kept.
    spaced = H20_TOPO.expandtabs(8)
    assert "\t" not in spaced and "\x1b[4m" in spaced
    assert nvidia.parse_topo(spaced).gpu_to_nic == nvidia.parse_topo(H20_TOPO).gpu_to_nic


def test_underline_codes_without_the_escape_byte_are_dropped_too():
    # Copied out of a terminal, the ESC byte is often lost and "[4m" ... "[0m" stays in the text.
    pasted = H20_TOPO.replace("\x1b[4m", "[4m").replace("\x1b[0m", "[0m")
    assert nvidia.parse_topo(pasted).gpu_to_nic == nvidia.parse_topo(H20_TOPO).gpu_to_nic


@pytest.fixture
def bin_dir(tmp_path, monkeypatch):
    return fakebin.first_on_path(tmp_path / "bin", monkeypatch)


def test_ib_devices_reads_a_space_separated_topo(tmp_path, bin_dir, capsys):
    h20_node(tmp_path / "sys")
    spaced = tmp_path / "topo.txt"
    spaced.write_text(H20_TOPO.expandtabs(8))
    fakebin.nvidia_smi(bin_dir, topo=spaced)
    out = tmp_path / "m.json"
    assert main(["ib-devices", "--sysfs-root", str(tmp_path / "sys"), "--out", str(out)]) == 0
    assert json.loads(out.read_text()) == EXPECTED
    assert "from nvidia-smi topo" in capsys.readouterr().out


def test_ib_devices_never_falls_back_to_sysfs_silently(tmp_path, bin_dir, capsys):
    h20_node(tmp_path / "sys")
    fakebin.nvidia_smi(bin_dir, fail_topo=True)
    out = tmp_path / "m.json"
    assert main(["ib-devices", "--sysfs-root", str(tmp_path / "sys"), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "nvidia-smi topo -m" in err and "--from-sysfs" in err and len(err.strip().splitlines()) == 1
    assert not out.exists()
    assert main(["ib-devices", "--sysfs-root", str(tmp_path / "sys"), "--out", str(out), "--from-sysfs"]) == 0
    assert json.loads(out.read_text()) == EXPECTED
    assert "from sysfs" in capsys.readouterr().out


def test_topo_that_does_not_name_the_nics_is_not_guessed_around(tmp_path, bin_dir, capsys):
    # NIC columns without the NIC Legend (as in many pastes): which NIC is which is unknown.
    h20_node(tmp_path / "sys")
    no_legend = tmp_path / "topo.txt"
    no_legend.write_text(H20_TOPO.split("NIC Legend")[0])
    fakebin.nvidia_smi(bin_dir, topo=no_legend)
    out = tmp_path / "m.json"
    assert main(["ib-devices", "--sysfs-root", str(tmp_path / "sys"), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "mlx5_0" in err and "NIC0" in err and "--from-sysfs" in err
