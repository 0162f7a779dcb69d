"""Knobs set in launch.env reach the servers in every target: the compose files (read back by the real compose
CLI), the SLURM job script, the Kubernetes manifests, the host launcher's commands, and `pdrepro stack up`
against stand-in servers (what each server printed of its environment, its record, and the sweep's
provenance.json). The issue's example, the Mooncake sender's thread pool and queue size, among them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from render_targets import LAUNCHED, host_commands, render_argv
from stackhelp import REPO, env, site, stack, up

from pdrepro.cli import main
from pdrepro.scenario.model import load_scenario

__all__ = ["site"]  # the fixture

# One of SGLang's, one of Mooncake's that acts only over RDMA, one over TCP only, and the shared one.
KNOBS = {"SGLANG_DISAGGREGATION_THREAD_POOL_SIZE": "16", "SGLANG_DISAGGREGATION_QUEUE_SIZE": "1",
         "MC_NUM_QP_PER_EP": "4", "MC_TCP_ENABLE_CONNECTION_POOL": "1", "NCCL_IB_GID_INDEX": "3"}


def _knobbed(tmp_path: Path, base: str = "h20-qwen3-235b-1p1d") -> Path:
    data = load_scenario(base).to_dict()
    data["launch"]["env"].update(KNOBS)
    path = tmp_path / "knobbed.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _assert_every_server_has_the_knobs(servers: dict[str, tuple[list[str], dict[str, str]]]) -> None:
    assert servers, "no server rendered"
    for name, (_argv, got) in servers.items():
        assert {k: got.get(k) for k in KNOBS} == KNOBS, name


@pytest.mark.parametrize("target", sorted(LAUNCHED))
def test_rendered_targets_hand_every_server_the_knobs(target, tmp_path):
    path = _knobbed(tmp_path)
    out = tmp_path / target
    assert main(render_argv(str(path), target, out)) == 0
    launched = LAUNCHED[target](out, load_scenario(path))
    _assert_every_server_has_the_knobs(launched.servers)


def test_the_host_launchers_commands_carry_the_knobs(tmp_path):
    path = _knobbed(tmp_path, "onebox-qwen25-0.5b")
    out = tmp_path / "onebox"
    assert main(["render", "--target", "onebox", "--launcher", "host", "--scenario", str(path), "--gpus", "0",
                 "--force-tcp", "--out", str(out)]) == 0
    commands = host_commands((out / "commands.txt").read_text())
    servers = {n: (argv, e) for n, (e, argv) in commands.items() if n.startswith(("prefill", "decode"))}
    _assert_every_server_has_the_knobs(servers)


def _python_on_path(tmp: Path) -> str:
    bin_dir = tmp / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "python").symlink_to(sys.executable)
    return f"{bin_dir}:{env()['PATH']}"


def _standin_env(log: Path) -> dict[str, str]:
    """What a stand-in server printed of its environment at its start (its first `standin env` line)."""
    line = next(x for x in log.read_text().splitlines() if x.startswith("standin env "))
    return json.loads(line.removeprefix("standin env "))


def test_stack_up_starts_servers_with_the_knobs_and_provenance_records_them(site):
    scenario = Path(site["options"][1])
    text = scenario.read_text()
    at = text.index("\n", text.index("WITH_NVIDIA_PEERMEM")) + 1
    scenario.write_text(text[:at] + "".join(f"    {k}: '{v}'\n" for k, v in KNOBS.items()) + text[at:])
    env_ = env(PATH=_python_on_path(site["tmp"]), STANDIN_CHILD="none")
    started = up(site, env_=env_)
    assert started.returncode == 0, started.stderr
    run = site["run"]
    try:
        record = json.loads((run / "stack.json").read_text())
        urls = {p["role"]: p["health_url"].rsplit("/", 1)[0] for p in record["processes"]}
        dataset = site["tmp"] / "sharegpt.json"
        dataset.write_text("[]")
        swept = subprocess.run(
            [sys.executable, "-m", "pdrepro", "sweep", "--scenario", str(scenario), "--router", urls["router"],
             "--prefill", urls["prefill"], "--decode", urls["decode"], "--out", str(run), "--model-path",
             str(site["model"]), "--dataset-path", str(dataset), "--bench-in-place", "--logs-from", str(run / "logs"),
             "--length-timeout", "60", "--wait-timeout", "30", "--no-analyze"],
            capture_output=True, text=True, env=env_, timeout=240, cwd=REPO)
        assert swept.returncode == 0, swept.stdout[-3000:] + swept.stderr[-3000:]
    finally:
        assert stack("down", str(run), "--grace", "1").returncode == 0
    servers = [p for p in record["processes"] if p["role"] in ("prefill", "decode")]
    assert len(servers) == 2
    for proc in servers:
        assert {k: proc["env"].get(k) for k in KNOBS} == KNOBS, proc["name"]
        # What the server process itself saw (the stand-in prints SGLANG_*, MC_* and the like at its start).
        seen = _standin_env(run / proc["log"])
        assert {k: seen.get(k) for k in KNOBS if not k.startswith("NCCL_")} == \
            {k: v for k, v in KNOBS.items() if not k.startswith("NCCL_")}, proc["name"]
    knobs = json.loads((run / "provenance.json").read_text())["knobs"]
    assert {k: v["value"] for k, v in knobs["scenario"].items() if k in KNOBS} == KNOBS
    assert knobs["scenario"]["MC_NUM_QP_PER_EP"]["rdma_only"] is True
    assert knobs["scenario"]["SGLANG_DISAGGREGATION_QUEUE_SIZE"]["default"] == "4"
    assert knobs["scenario"]["SGLANG_DISAGGREGATION_QUEUE_SIZE"]["source"].startswith("sgl-project/sglang@")
    assert sorted(knobs["servers"]) == sorted(p["name"] for p in servers)
    for name, got in knobs["servers"].items():
        assert {k: got.get(k) for k in KNOBS} == KNOBS, name
        assert "CUDA_VISIBLE_DEVICES" not in got  # the plan's own are no knobs
