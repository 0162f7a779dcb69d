"""`pdrepro render`: golden files of the published launch, and bad input
refused with one line naming it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from render_targets import render_argv

from pdrepro.cli import main
from pdrepro.launch import plan as launch
from pdrepro.scenario.model import load_scenario, shipped_names

GOLDEN = Path(__file__).parent.parent / "golden" / "render" / "h20-qwen3-235b-1p1d" / "compose"
ARGS = ["render", "--scenario", "h20-qwen3-235b-1p1d", "--prefill-ip", "192.0.2.10", "--decode-ip", "192.0.2.20"]


def test_golden_holds_the_published_flags():
    # Independent of launch.py: the golden itself must say what the source published.
    text = (GOLDEN / "commands.txt").read_text()
    for needle in ("SGLANG_HOST_IP=192.0.2.10 MOONCAKE_PROTOCOL=rdma WITH_NVIDIA_PEERMEM=1",
                   "--disaggregation-bootstrap-port 8998", "--prefill http://192.0.2.10:30000 8998",
                   "--decode http://192.0.2.20:30001", "--policy round_robin", "--chunked-prefill-size -1"):
        assert needle in text, needle
    assert text.count("--tp-size 8") == 2


def test_given_paths_are_checked_and_written(tmp_path, capsys):
    model = tmp_path / "Qwen3"
    model.mkdir()
    (model / "config.json").write_text("{}")
    dataset = tmp_path / "sharegpt.json"
    dataset.write_text("[]")
    ib = tmp_path / "ib_devices.json"
    ib.write_text(json.dumps({str(g): f"mlx5_{g // 2}" for g in range(8)}))
    out = tmp_path / "deploy"
    assert main([*ARGS, "--model", str(model), "--dataset", str(dataset), "--ib-devices", str(ib),
                 "--gpus", "0,1,2,3,4,5,6,7", "--memlock", "1073741824", "--out", str(out)]) == 0
    env = (out / "prefill.env").read_text().splitlines()
    assert f"MODEL_PATH={model}" in env and f"DATASET_PATH={dataset}" in env
    assert f"IB_DEVICES_FILE={ib}" in env and "MEMLOCK=1073741824" in env
    assert json.loads((out / "ib_devices.json").read_text())["7"] == "mlx5_3"
    assert "note:" not in capsys.readouterr().out


def test_loopback_is_fine_on_one_node(tmp_path, capsys):
    out = tmp_path / "deploy"
    assert main([*ARGS[:4], "127.0.0.1", "--decode-ip", "127.0.0.1", "--out", str(out)]) == 0
    assert "--prefill http://127.0.0.1:30000 8998" in capsys.readouterr().out


def test_same_node_splits_gpus():
    scenario = load_scenario("h20-qwen3-235b-1p1d")
    site = launch.Site(prefill_hosts=("192.0.2.10",), decode_hosts=("192.0.2.10",), model_path="/m", dataset_path="/d",
                       ib_devices_file="/i.json", gpus=tuple(range(16)), image="img")
    plan = launch.Plan(scenario, site)
    assert plan.server_gpus("prefill") == tuple(range(8)) and plan.server_gpus("decode") == tuple(range(8, 16))


def _scenario_file(tmp_path: Path, drop_launch=False, **launch_changes) -> str:
    data = load_scenario("h20-qwen3-235b-1p1d").to_dict()
    if drop_launch:
        del data["launch"]
    else:
        data["launch"].update(launch_changes)
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return str(path)


def _model_without_config(tmp_path: Path) -> str:
    (tmp_path / "empty-model").mkdir()
    return str(tmp_path / "empty-model")


def _ib(tmp_path: Path, content: str, name="ib_devices.json") -> str:
    (tmp_path / name).write_text(content)
    return str(tmp_path / name)


BAD = {
    "missing ip": (lambda t: ["render", "--decode-ip", "192.0.2.20"], "--prefill-ip"),
    "not an ip": (lambda t: [*ARGS[:4], "node-a", *ARGS[5:]], "'node-a' is not an IP address"),
    "ipv6": (lambda t: [*ARGS[:4], "2001:db8::1", *ARGS[5:]], "IPv6 is not supported"),
    "short ip": (lambda t: [*ARGS[:6], "192.0.2"], "--decode-ip '192.0.2'"),
    "unspecified ip": (lambda t: [*ARGS[:4], "0.0.0.0", *ARGS[5:]], "--prefill-ip '0.0.0.0' is not a host address"),
    "multicast ip": (lambda t: [*ARGS[:6], "239.1.1.1"], "--decode-ip '239.1.1.1' is not a host address"),
    "loopback on two nodes": (lambda t: [*ARGS[:6], "127.0.0.1"], "--decode-ip 127.0.0.1: a loopback address"),
    "model without config": (lambda t: [*ARGS, "--model", _model_without_config(t)], "no config.json"),
    "tp above gpus": (lambda t: [*ARGS, "--gpus", "0,1,2,3"], "TP is 8, larger than the 4 GPUs"),
    "same node too few gpus": (lambda t: [*ARGS[:6], "192.0.2.10", "--gpus", "0,1,2,3,4,5,6,7"], "needs 16 GPUs"),
    "bad gpu list": (lambda t: [*ARGS, "--gpus", "0,x"], "--gpus '0,x'"),
    "unknown scenario": (lambda t: ["render", "--scenario", "no-such", *ARGS[3:]], "unknown scenario 'no-such'"),
    "no launch section": (lambda t: ["render", "--scenario", _scenario_file(t, drop_launch=True), *ARGS[3:]],
                          "has no launch section"),
    "unknown env": (lambda t: ["render", "--scenario", _scenario_file(t, env={"MOONCAKE_PROTOCOL": "rdma",
                                                                                "WITH_NVIDIA_PEERMEM": "1", "TYPO_VAR": "1"}),
                               *ARGS[3:]],
                    "launch.env.TYPO_VAR"),
    "flag compose cannot drop": (lambda t: ["render", "--scenario", _scenario_file(t, disable_radix_cache=False), *ARGS[3:]],
                                 "launch.disable_radix_cache is false"),
    "ib devices not json name": (lambda t: [*ARGS, "--ib-devices", _ib(t, "{}", "ib.txt")], "must end in .json"),
    "ib devices missing gpu": (lambda t: [*ARGS, "--ib-devices", _ib(t, '{"0": "mlx5_0"}')], "GPU 1 has no device"),
    "ib devices bad json": (lambda t: [*ARGS, "--ib-devices", _ib(t, "{not json")], "not readable JSON"),
    # SGLang int()s every key: "default" and "*" make the server raise at start-up.
    "ib devices default key": (lambda t: [*ARGS, "--ib-devices", _ib(t, '{"default": "mlx5_0"}')],
                               "key 'default' is not a GPU id"),
    "ib devices star key": (lambda t: [*ARGS, "--ib-devices", _ib(t, '{"*": "mlx5_0", "0": "mlx5_1"}')],
                            "key '*' is not a GPU id"),
    "ib devices superscript key": (lambda t: [*ARGS, "--ib-devices", _ib(t, '{"\u00b2": "mlx5_0"}')],
                                   "is not a GPU id"),
    "ib devices missing": (lambda t: [*ARGS, "--ib-devices", str(t / "absent.json")], "no such file"),
    "dataset missing": (lambda t: [*ARGS, "--dataset", str(t / "absent.json")], "--dataset"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_is_one_line(case, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("PREFILL_IP", raising=False)
    monkeypatch.delenv("DECODE_IP", raising=False)
    make_args, expected = BAD[case]
    out = tmp_path / "deploy"
    rc = main([*make_args(tmp_path), "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("pdrepro render: error: "), err
    assert expected in lines[0]
    assert not out.exists(), "nothing is written for bad input"


def test_cli_process_reports_without_traceback(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "pdrepro", *ARGS[:4], "10.0.0.300", "--out", str(tmp_path / "o")],
                          capture_output=True, text=True, env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip() == ("pdrepro render: error: --prefill-ip '10.0.0.300' is not an IP address; "
                                   "give the node's RDMA-reachable address (a host name is not accepted)")


def test_regular_only_scenario_on_one_node(tmp_path, capsys):
    ports = {"router": 8000, "regular": [30000, 30001]}
    scenario = _scenario_file(tmp_path, stacks=["regular"], ports=ports, regular_tp=2, env={})
    out = tmp_path / "deploy"
    assert main(["render", "--scenario", scenario, "--prefill-ip", "192.0.2.10", "--decode-ip", "192.0.2.10",
                 "--gpus", "0,1,2,3", "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["commands.txt", "regular.env", "regular.yaml"]
    services = yaml.safe_load((out / "regular.yaml").read_text())["services"]
    assert [services[n]["environment"]["CUDA_VISIBLE_DEVICES"] for n in ("regular-1", "regular-2")] == ["0,1", "2,3"]
    assert "--worker-urls http://192.0.2.10:30000 http://192.0.2.10:30001" in capsys.readouterr().out


@pytest.mark.parametrize("name", [n for n in shipped_names() if load_scenario(n).launch is not None])
def test_every_shipped_launch_renders(name, tmp_path):
    out = tmp_path / "deploy"
    assert main(render_argv(name, "compose", out)) == 0
    t = load_scenario(name).topology
    servers = t.prefill.nodes * t.prefill.servers_per_node + t.decode.nodes * t.decode.servers_per_node
    assert (out / "commands.txt").read_text().count("python -m sglang.launch_server") >= servers
