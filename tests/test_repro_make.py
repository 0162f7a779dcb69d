"""`make repro` wiring: reads the rendered decode.env, stops on bad input."""

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _make(tmp_path, *extra):
    # -o setup: use this interpreter's install instead of building .venv.
    return subprocess.run(["make", "-s", "-o", "setup", "repro", f"DEPLOY={tmp_path / 'deploy'}",
                           f"PDREPRO={sys.executable} -m pdrepro", f"RUN={tmp_path / 'run'}", *extra],
                          cwd=REPO, capture_output=True, text=True, timeout=180)


def test_without_rendered_env_it_says_render_first(tmp_path):
    proc = _make(tmp_path)
    assert proc.returncode != 0
    assert "no " in proc.stderr and "decode.env; run make render first" in proc.stderr


def test_sweep_stop_ends_repro_with_the_sweep_message(tmp_path):
    deploy = tmp_path / "deploy"
    deploy.mkdir()
    data = tmp_path / "sharegpt.json"
    data.write_text("[]")
    logs = tmp_path / "logs"
    logs.mkdir()
    (deploy / "decode.env").write_text(
        f"GPU_IMAGE=pdrepro-gpu:0.1.0\nPREFILL_IP=127.0.0.1\nDECODE_IP=127.0.0.1\nPREFILL_PORT=9\nDECODE_PORT=9\n"
        f"ROUTER_PORT=9\nMODEL_PATH={tmp_path}\nDATASET_PATH={data}\nLOG_DIR={logs}\n")
    proc = _make(tmp_path, "SKIP_DOCTOR=1", f"PREFILL_LOGS={logs}", "SWEEP_ARGS=--wait-timeout 1")
    assert proc.returncode != 0
    assert "== 2/4 sweep: h20-qwen3-235b-1p1d against http://127.0.0.1:9" in proc.stdout
    assert "router at http://127.0.0.1:9 not healthy after 1 s" in proc.stderr
    assert "== 3/4" not in proc.stdout  # a stopped sweep is not analysed
