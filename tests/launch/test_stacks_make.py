"""make up-prefill / up-decode on the nodes of an xPyD render: NODE picks the node's compose and env file."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
XPYD = ROOT / "tests" / "golden" / "render" / "h20-qwen3-235b-2p2d" / "compose"


def _make(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "--no-print-directory", *args, f"DEPLOY={XPYD}"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)


def test_each_node_starts_with_its_own_env_file():
    for target, role in (("up-prefill", "prefill"), ("up-decode", "decode")):
        proc = _make("-n", target, "NODE=1")
        assert proc.returncode == 0, proc.stderr
        assert f"-f {XPYD}/{role}-1.yaml --env-file {XPYD}/{role}-1.env up -d --wait" in proc.stdout


def test_without_node_an_xpyd_render_says_to_give_it():
    proc = _make("up-prefill")
    assert proc.returncode == 2
    assert "NODE=<i>" in proc.stderr and "prefill-0.yaml" in proc.stderr
