"""pdrepro.host: running host tools, the Docker engine, the NIC record read from sysfs."""

from __future__ import annotations

import sys

import pytest

from pdrepro.host import docker as docker_engine
from pdrepro.host import sysfs
from pdrepro.host.tools import ToolFailed, ToolMissing, ToolTimeout, capture, run_tool


def test_a_tool_not_on_path_is_missing_by_name():
    with pytest.raises(ToolMissing) as err:
        capture(["pdrepro-no-such-tool"], timeout=5)
    assert err.value.name == "pdrepro-no-such-tool"


def test_a_tool_past_its_timeout_keeps_what_it_printed():
    code = "import sys, time; print('half way', flush=True); time.sleep(30)"
    with pytest.raises(ToolTimeout) as err:
        capture([sys.executable, "-c", code], timeout=1)
    assert "did not finish within 1 s" in str(err.value)
    assert "half way" in err.value.output
    assert isinstance(err.value, ToolFailed)  # callers that only know ToolFailed still catch it


def test_a_failing_tool_names_its_status_and_last_lines():
    code = "import sys; print('one'); print('two', file=sys.stderr); sys.exit(3)"
    with pytest.raises(ToolFailed, match=r"exited 3: two"):
        run_tool([sys.executable, "-c", code])
    done = capture([sys.executable, "-c", code], timeout=30)
    assert (done.returncode, done.output) == (3, "one\ntwo")


def test_an_engine_that_is_not_there_is_unreachable_in_one_line(monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    with pytest.raises(docker_engine.EngineUnreachable) as err:
        docker_engine.connect(timeout=2)
    assert "\n" not in str(err.value) and str(err.value)
    assert err.value.kind == type(err.value.cause).__name__
    assert not err.value.sdk_missing


def test_the_nic_record_keeps_the_raw_sysfs_words(tmp_path):
    ib = tmp_path / "class" / "infiniband"
    port = ib / "mlx5_0" / "ports" / "1"
    port.mkdir(parents=True)
    (ib / "mlx5_0" / "fw_ver").write_text("28.39.1002\n")
    (port / "rate").write_text("400 Gb/sec (4X NDR)\n")
    (port / "state").write_text("4: ACTIVE\n")
    assert sysfs.nic_inventory(ib) == {"mlx5_0": {"fw_ver": "28.39.1002", "board_id": None, "ports": {
        "1": {"rate": "400 Gb/sec (4X NDR)", "state": "4: ACTIVE", "link_layer": None}}}}
    assert sysfs.nic_inventory(tmp_path / "absent") == {}
