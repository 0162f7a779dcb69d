"""pdrepro versions: each probe reports what is there, and says so when it is not."""

from __future__ import annotations

import importlib.metadata as md
import json

import fakebin
import pytest

from pdrepro import __version__
from pdrepro.cli import main
from pdrepro.core.pins import load_pins
from pdrepro.image import versions as vr


@pytest.fixture
def no_tools(monkeypatch):
    """As on a node without nvidia-smi / nvcc on PATH."""
    monkeypatch.setattr(vr, "_run", lambda argv, timeout=20: (None, f"{argv[0]} not on PATH"))


def test_python_package_found_and_missing():
    found = vr.python_package(("PyYAML",))
    assert found == {"found": True, "version": md.version("PyYAML"), "distribution": "PyYAML"}
    missing = vr.python_package(("no-such-dist-xyz", "nor-this-one"))
    assert missing["found"] is False and missing["version"] is None
    assert "no-such-dist-xyz" in missing["reason"]


def test_python_package_takes_the_first_installed_name():
    entry = vr.python_package(("no-such-dist-xyz", "tabulate"))
    assert entry["distribution"] == "tabulate" and entry["version"] == md.version("tabulate")


def test_cuda_toolkit_from_version_json(tmp_path, no_tools):
    (tmp_path / "version.json").write_text(json.dumps({"cuda": {"name": "CUDA SDK", "version": "12.9.1"}}))
    entry = vr.cuda_toolkit(tmp_path)
    assert entry["found"] and entry["version"] == "12.9.1"
    missing = vr.cuda_toolkit(tmp_path / "absent")
    assert missing["found"] is False and "nvcc" in missing["reason"]


def test_cuda_toolkit_from_nvcc(tmp_path, monkeypatch):
    out = "nvcc: NVIDIA (R) Cuda compiler driver\nCuda compilation tools, release 12.9, V12.9.86\n"
    monkeypatch.setattr(vr, "_run", lambda argv, timeout=20: (0, out))
    assert vr.cuda_toolkit(tmp_path)["version"] == "12.9.86"


def test_nvidia_driver_from_proc(tmp_path, no_tools):
    proc = tmp_path / "version"
    proc.write_text("NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024\n")
    entry = vr.nvidia_driver(proc)
    assert entry == {"found": True, "version": "550.54.15", "source": str(proc)}
    assert vr.nvidia_driver(tmp_path / "absent")["found"] is False


def test_nvidia_driver_from_nvidia_smi(monkeypatch, tmp_path):
    monkeypatch.setattr(vr, "_run", lambda argv, timeout=20: (0, "550.54.15, NVIDIA H20\n550.54.15, NVIDIA H20"))
    entry = vr.nvidia_driver(tmp_path / "absent")
    assert entry["version"] == "550.54.15" and entry["gpus"] == ["NVIDIA H20", "NVIDIA H20"]


def test_kernel_modules(tmp_path):
    (tmp_path / "nvidia_peermem").mkdir()
    (tmp_path / "nvidia_peermem" / "version").write_text("550.54.15\n")
    (tmp_path / "ib_uverbs").mkdir()
    assert vr.kernel_module("nvidia_peermem", tmp_path) == {"loaded": True, "version": "550.54.15"}
    assert vr.kernel_module("ib_uverbs", tmp_path) == {"loaded": True, "version": None}
    assert vr.kernel_module("rdma_rxe", tmp_path) == {"loaded": False}


def test_shared_library():
    libc = vr.shared_library("c", vr._ldconfig_paths())
    assert libc["found"] and libc["soname"].startswith("libc.so")
    assert vr.shared_library("no-such-library-xyz", {})["found"] is False


def test_os_package():
    assert vr.os_package("no-such-package-xyz")["found"] is False


def test_os_package_under_its_ubuntu_noble_name(tmp_path, monkeypatch):
    # The GPU image is Ubuntu 24.04, where librdmacm1 is installed as librdmacm1t64.
    fakebin.install(tmp_path, "dpkg-query", """case "$3" in
  librdmacm1t64) printf 'install ok installed\\t50.0-2build2';;
  *) echo "dpkg-query: no packages found matching $3" >&2; exit 1;;
esac
""")
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    entry = vr.os_package(*vr.OS_PACKAGES["librdmacm1"])
    assert entry == {"found": True, "version": "50.0-2build2", "manager": "dpkg", "package": "librdmacm1t64"}
    missing = vr.os_package(*vr.OS_PACKAGES["perftest"])
    assert missing["found"] is False and "perftest" in missing["reason"]


def _mooncake_on_path(root, monkeypatch, engine_source: str) -> None:
    """A `mooncake` package whose engine module is ENGINE_SOURCE, first on PYTHONPATH."""
    package = root / "mooncake"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "engine.py").write_text(engine_source)
    monkeypatch.setenv("PYTHONPATH", str(root))


def test_mooncake_engine_import_is_checked_in_a_child(tmp_path, monkeypatch):
    _mooncake_on_path(tmp_path / "good", monkeypatch, "class TransferEngine: pass\n")
    entry = vr.mooncake_engine()
    assert entry["importable"] is True and entry["module"].endswith("engine.py")

    _mooncake_on_path(tmp_path / "bad", monkeypatch,
                      "raise ImportError('libibverbs.so.1: cannot open shared object file')\n")
    entry = vr.mooncake_engine()
    assert entry["importable"] is False and "libibverbs.so.1" in entry["reason"]


def test_collect_versions_shape():
    report = vr.collect_versions()
    pins = load_pins()
    assert report["bundle"]["version"] == __version__
    assert report["pins"]["sglang_commit"] == pins["SGLANG_COMMIT"]
    assert report["pins"]["mooncake_commit"] == pins["MOONCAKE_COMMIT"]
    assert set(report["packages"]) == set(vr.PACKAGES)
    for entry in report["packages"].values():
        assert entry["found"] == (entry["version"] is not None)
    assert json.loads(json.dumps(report)) == report


def test_image_env_is_reported(monkeypatch):
    monkeypatch.setenv("PDREPRO_IMAGE", "smoke")
    monkeypatch.setenv("PDREPRO_IMAGE_MOONCAKE_COMMIT", load_pins()["MOONCAKE_COMMIT"])
    report = vr.collect_versions()
    assert report["image"]["pdrepro_image"] == "smoke"


def test_cli_table_and_json(capsys):
    assert main(["versions"]) == 0
    table = capsys.readouterr().out
    assert "pin sglang_commit" in table and load_pins()["SGLANG_COMMIT"] in table
    assert "mooncake.engine" in table and "pdrepro" in table
    assert main(["versions", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["schema_version"] == 1 and report["bundle"]["version"] == __version__
