"""The NVIDIA driver held to what the GPU image's CUDA needs: parsed from real
nvidia-smi output (tests/recorded/nvidia-smi/), checked by `pdrepro doctor`
with a role, reported by `pdrepro versions`."""

from __future__ import annotations

import json

import fakebin
import pytest
from sysfs_builder import h20_node

from pdrepro.cli import main
from pdrepro.core.pins import load_pins
from pdrepro.fabric import doctor
from pdrepro.fabric.driver import Requirement, branch
from pdrepro.host.nvidia import parse_driver_version
from pdrepro.image import versions as vr

RECORDED = fakebin.RECORDED / "nvidia-smi"
FIXTURES = fakebin.FIXTURES / "nvidia-smi"
PINS = load_pins()
NEED = Requirement.from_pins(PINS)


def _recorded(name: str) -> str:
    """The tool's output, less the line naming where it was recorded."""
    return "".join(l for l in (RECORDED / name).read_text().splitlines(True) if not l.startswith("# source"))


@pytest.mark.parametrize("name, version", [
    ("smi-550.144.03-h200-sglang-3196.txt", "550.144.03"),
    ("smi-570.86.15-h200-ollama-9031.txt", "570.86.15"),
    ("smi-610.43.02-b200-kmd-sglang-27487.txt", "610.43.02"),   # R610 says "KMD Version"
    ("smi-q-580.105.06-cubecos-312.txt", "580.105.06"),           # nvidia-smi -q
])
def test_driver_version_from_recorded_nvidia_smi(name, version):
    assert parse_driver_version(_recorded(name)) == version


def test_driver_version_from_the_query_doctor_runs():
    assert parse_driver_version((FIXTURES / "driver-query-580.65.06-8gpu.csv").read_text()) == "580.65.06"
    with pytest.raises(ValueError, match="no driver version"):
        parse_driver_version("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n")


def test_the_minimum_comes_from_versions_env():
    assert NEED.minimum == int(PINS["GPU_MIN_DRIVER"]) == 580
    assert NEED.cuda_major == int(PINS["CUDA_VERSION"].split(".")[0]) == 13


@pytest.mark.parametrize("name, ok", [
    ("smi-550.144.03-h200-sglang-3196.txt", False),
    ("smi-570.86.15-h200-ollama-9031.txt", False),
    ("smi-q-580.105.06-cubecos-312.txt", True),
    ("smi-610.43.02-b200-kmd-sglang-27487.txt", True),
])
def test_old_drivers_are_refused_with_the_fix(name, ok):
    version = parse_driver_version(_recorded(name))
    problem = NEED.problem(version)
    if ok:
        assert problem is None and branch(version) >= 580
    else:
        assert problem == (f"driver {version} is older than R580, which CUDA 13 in the GPU image needs: "
                           "install 580 or newer")


@pytest.fixture
def bin_dir(tmp_path, monkeypatch):
    return fakebin.first_on_path(tmp_path / "bin", monkeypatch)


def _doctor(tmp_path, role, driver_file, bin_dir):
    h20_node(tmp_path / "sys")
    fakebin.nvidia_smi(bin_dir, driver=driver_file)
    ctx = doctor.Context(sysfs_root=tmp_path / "sys", role=role, env={}, dev_dir=None, ports=[])
    return {c.name: c for c in doctor.run_checks(ctx)[0]}["nvidia-driver"]


def test_doctor_with_a_role_fails_an_old_driver(tmp_path, bin_dir):
    check = _doctor(tmp_path, "decode", FIXTURES / "driver-query-575.57.08-2gpu.csv", bin_dir)
    assert check.status == "fail"
    assert check.detail == "driver 575.57.08 is older than R580, which CUDA 13 in the GPU image needs"
    assert check.fix == "install 580 or newer"


def test_doctor_passes_r580_and_only_warns_without_a_role(tmp_path, bin_dir):
    assert _doctor(tmp_path / "a", "prefill", FIXTURES / "driver-query-580.65.06-8gpu.csv", bin_dir).status == "pass"
    assert _doctor(tmp_path / "b", None, FIXTURES / "driver-query-575.57.08-2gpu.csv", bin_dir).status == "warn"


def test_doctor_cli_prints_the_driver_fix(tmp_path, bin_dir, capsys):
    h20_node(tmp_path / "sys")
    fakebin.nvidia_smi(bin_dir, driver=FIXTURES / "driver-query-575.57.08-2gpu.csv")
    code = main(["doctor", "--role", "prefill", "--sysfs-root", str(tmp_path / "sys"), "--json"])
    out = json.loads(capsys.readouterr().out)
    (check,) = [c for c in out["checks"] if c["name"] == "nvidia-driver"]
    assert code != 0 and check["status"] == "fail" and check["fix"] == "install 580 or newer"


def test_doctor_without_nvidia_smi_and_a_role_cannot_vouch_for_the_driver(tmp_path, bin_dir):
    h20_node(tmp_path / "sys")
    ctx = doctor.Context(sysfs_root=tmp_path / "sys", role="prefill", env={}, dev_dir=None, ports=[])
    check = {c.name: c for c in doctor.run_checks(ctx)[0]}["nvidia-driver"]
    assert check.status == "fail" and "nvidia-smi not found" in check.detail


@pytest.mark.parametrize("version, meets", [("570.86.15", False), ("580.65.06", True)])
def test_versions_reports_the_driver_against_the_minimum(monkeypatch, capsys, version, meets):
    monkeypatch.setattr(vr, "_run", lambda argv, timeout=20: (0, f"{version}, NVIDIA H20"))
    entry = vr.collect_versions()["nvidia_driver"]
    assert entry["version"] == version
    assert (entry["minimum_branch"], entry["for_cuda"], entry["meets_minimum"]) == (580, 13, meets)
    assert main(["versions"]) == 0
    (row,) = [l for l in capsys.readouterr().out.splitlines() if l.startswith("NVIDIA driver")]
    assert version in row and "needs R580+" in row and ("ok" if meets else "TOO OLD") in row
