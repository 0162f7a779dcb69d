"""`pdrepro sweep --ib-devices MAP` against servers that name their own map: the two are compared by meaning before
the first length runs, and a disagreement is one line naming both maps, exit 2, with nothing kept in the run that a
rerun with the right map would trip over. Real stand-in servers on 127.0.0.1 answer /get_server_info."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from fakecluster import FakeBench, FakeCluster
from sweephelp import config, dataset, short_scenario

from pdrepro.core.errors import UserError
from pdrepro.sweep.railmap import gpus_in_use
from pdrepro.sweep.runner import run_sweep


def _map_file(path: Path, devices: dict[int, str]) -> Path:
    path.write_text(json.dumps({str(g): d for g, d in devices.items()}))
    return path


def _shifted(scenario) -> dict[int, str]:
    """Every GPU in use given the port next to the one the stand-in servers were started with (mlx5_{g % 4})."""
    return {g: f"mlx5_{(g + 1) % 4}" for g in range(gpus_in_use(scenario))}


def test_a_given_map_the_servers_contradict_is_one_line_and_exit_2(tmp_path):
    with FakeCluster(tmp_path, short_scenario((128,))) as c:
        given = _map_file(tmp_path / "given-ib.json", _shifted(c.scenario))
        proc = subprocess.run(
            [sys.executable, "-m", "pdrepro", "sweep", "--scenario", "h20-qwen3-235b-1p1d", "--router", c.router.url,
             "--prefill", c.prefill.url, "--decode", c.decode.url, "--out", str(tmp_path / "run"),
             "--model-path", str(tmp_path), "--dataset-path", str(dataset(tmp_path)), "--image", "pdrepro-gpu:0.1.0",
             "--logs-from", str(c.log_dir), "--wait-timeout", "10", "--ib-devices", str(given)],
            capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1 and "Traceback" not in proc.stderr
    # Both maps are named, each with what it gives GPU 0.
    assert f"--ib-devices {given}" in errors[0] and c.ib_devices_file in errors[0]
    assert "GPU 0 -> mlx5_1" in errors[0] and "GPU 0 -> mlx5_0" in errors[0]
    # Refused before any length ran, and the wrong map was not kept: a rerun with the right one is not refused
    # as "differs from the map the run began with".
    run = tmp_path / "run"
    assert not (run / "ib_devices.json").exists()
    assert not list((run / "bench").glob("*.jsonl"))


def test_a_given_map_that_means_what_the_servers_say_is_kept_as_given(tmp_path):
    with FakeCluster(tmp_path, short_scenario((128,))) as c:
        theirs = json.loads(Path(c.ib_devices_file).read_text())
        # Another spelling of the same map: keys in another order, spaces in the lists, a GPU the run does not use.
        spelled = {k: f" {v} " for k, v in reversed(theirs.items())} | {"63": "mlx5_9"}
        given = tmp_path / "given-ib.json"
        given.write_text(json.dumps(spelled, indent=4))
        out = run_sweep(config(tmp_path, c, FakeBench(c), ib_devices=given))
    assert out.done == [128]
    assert (tmp_path / "run" / "ib_devices.json").read_text() == given.read_text()


def test_a_resumed_run_whose_servers_restarted_with_another_map_is_refused(tmp_path):
    scenario = short_scenario((128, 256))
    with FakeCluster(tmp_path, scenario) as c:
        # The first sweep is stopped by a signal during its second length; the servers named their map.
        with pytest.raises(KeyboardInterrupt):
            run_sweep(config(tmp_path, c, FakeBench(c, behaviour={256: "interrupt"})))
        kept = tmp_path / "run" / "ib_devices.json"
        assert json.loads(kept.read_text()) == json.loads(Path(c.ib_devices_file).read_text())
        # The stack comes back started with another map; one length is still to measure.
        _map_file(Path(c.ib_devices_file), _shifted(scenario))
        bench = FakeBench(c)
        with pytest.raises(UserError, match=r"the run's ib_devices.json \(kept when it began\)") as refused:
            run_sweep(config(tmp_path, c, bench))
    assert c.ib_devices_file in str(refused.value) and "GPU 0 -> mlx5_1" in str(refused.value)
    assert bench.calls == []  # refused before the remaining length ran
    assert json.loads(kept.read_text())["0"] == "mlx5_0"  # the run's own map is left as it was
