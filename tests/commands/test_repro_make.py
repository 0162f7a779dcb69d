"""`make repro` wiring: reads the rendered decode.env, stops on bad input."""

import os
import shlex
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


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


def test_failed_length_is_still_analysed_and_gated(tmp_path):
    """A sweep that lost one length (exit 1) still ends in the report and the gates, which name it."""
    deploy = tmp_path / "deploy"
    deploy.mkdir()
    (deploy / "decode.env").write_text(
        f"GPU_IMAGE=pdrepro-gpu:0.1.0\nPREFILL_IP=127.0.0.1\nDECODE_IP=127.0.0.1\nPREFILL_PORT=9\nDECODE_PORT=9\n"
        f"ROUTER_PORT=9\nMODEL_PATH={tmp_path}\nDATASET_PATH={tmp_path}/d.json\nLOG_DIR={tmp_path}\n")
    # The real `pdrepro repro`, whose sweep stage stands in for `pdrepro sweep`: it leaves the run a sweep
    # leaves when 16384 timed out and exits 1 as the sweep does; analyze and the gates are the real ones.
    fake = tmp_path / "pdrepro"
    fake.write_text(
        "#!/bin/sh\n"
        f'PYTHONPATH="{REPO / "tests"}:$PYTHONPATH" exec "{sys.executable}" -c "$BUILD" "{tmp_path / "run"}" "$@"\n')
    fake.chmod(0o755)
    build = ("import sys, json; from pathlib import Path; from runbuilder import build_run; "
             "from pdrepro import cli; from pdrepro.commands import sweep; "
             "from pdrepro.scenario.model import load_scenario; sc = load_scenario('h20-qwen3-235b-1p1d'); "
             "prov = {'pins': {'sglang_commit': 'a', 'mooncake_commit': 'b'}, 'host': {}, 'environment': {}, "
             "'endpoints': {}, 'scenario': {'name': sc.name}, 'transport': {'proven': True, 'servers': {}}}; "
             "run = Path(sys.argv[1]); "
             "sweep.run = lambda request: build_run(run, sc, drop_lengths={16384}, provenance=prov) and 1; "
             "sys.exit(cli.main(sys.argv[2:]))")
    proc = subprocess.run(["make", "-s", "-o", "setup", "repro", f"DEPLOY={deploy}", f"PDREPRO={fake}",
                           f"PYTEST={sys.executable} -m pytest -p no:xdist", f"RUN={tmp_path / 'run'}", "SKIP_DOCTOR=1"],
                          cwd=REPO, capture_output=True, text=True, timeout=300, env={**os.environ, "BUILD": build})
    assert proc.returncode != 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "== 3/4 analyze" in proc.stdout and "== 4/4 gates" in proc.stdout
    assert f"report: {tmp_path / 'run'}/report.md" in proc.stdout
    assert "test_bandwidth[L16384]" in proc.stdout and "no bench result for prompt length 16384" in proc.stdout
    assert (tmp_path / "run" / "junit.xml").is_file() and (tmp_path / "run" / "report.md").is_file()


def _dry_repro(target: str, *extra: str) -> list[str]:
    """The words of the one `pdrepro repro` call `make -n` prints for the target."""
    out = subprocess.run(["make", "-n", "--no-print-directory", "-o", "setup", target, "RUN=runs/X", "PDREPRO=pdrepro",
                          "PYTEST=pytest", *extra], cwd=REPO, capture_output=True, text=True, check=True).stdout
    text = out.replace("\\\n", " ")
    assert text.count("pdrepro repro ") == 1, text
    # Shell words up to the end of the command (the recipe's last one): make -n prints the $$ of the recipe as $.
    return shlex.split(text[text.index("pdrepro repro "):].split(";")[0].replace("$", "\\$"))


def _flag(words: list[str], flag: str) -> str:
    return words[words.index(flag) + 1]


def test_repro_and_onebox_repro_run_the_same_pipeline():
    """Both targets are one `pdrepro repro` call: the pipeline (sweep, analyze, gates, first failing status)
    is the command's, tested in tests/commands/test_pipeline.py; here, that each hands it what it should."""
    repro, onebox = _dry_repro("repro"), _dry_repro("onebox-repro", "DATASET=/d.json")
    assert _flag(repro, "--scenario") == "h20-qwen3-235b-1p1d" and "--prefill-logs-from" in repro
    assert _flag(repro, "--preflight") == "decode" and "--quiet" not in repro
    assert _flag(onebox, "--scenario") == "onebox-qwen25-0.5b" and _flag(onebox, "--dataset-path") == "/d.json"
    assert "--preflight" not in onebox and "--quiet" in onebox
    for words in (repro, onebox):
        assert words[:2] == ["pdrepro", "repro"]
        assert (_flag(words, "--out"), _flag(words, "--gates"), _flag(words, "--pytest")) == ("runs/X", "repro/", "pytest")
    assert "--preflight" not in _dry_repro("repro", "SKIP_DOCTOR=1")
    # The decode node's record is the preflight's; the prefill node's is given, and the pair check reads the launch.
    assert _flag(repro, "--node-record") == "deploy/nodes/prefill.json" and _flag(repro, "--deploy") == "deploy"
    assert "--node-record" not in _dry_repro("repro", "SKIP_DOCTOR=1") and "--node-record" not in onebox


def test_node_record_writes_the_role_given():
    out = subprocess.run(["make", "-n", "--no-print-directory", "-o", "setup", "node-record", "ROLE=prefill",
                          "PDREPRO=pdrepro"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    assert 'pdrepro doctor --role "prefill" --scenario "h20-qwen3-235b-1p1d" --image "$GPU_IMAGE" ' \
           '--out "deploy/nodes/prefill.json"' in out.replace("$$", "$")
