"""One run's evidence, on copies of the recorded one-GPU host run (real SGLang logs and the sweep's own
sweep-state.json): requests logged while the sweep was not measuring their length, or a server started again
after the last request it served, refuse the run on one line; under a gating pins_match a run that cannot show
what ran fails the gate in check and in the gates alike."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from recordedrun import copy_run
from runbuilder import build_run, sweep_provenance

from pdrepro.cli import main
from pdrepro.kinds.registry import load_or_analyze
from pdrepro.scenario.model import load_scenario
from pdrepro.verdicts.gates import evaluate, failed

REPO = Path(__file__).resolve().parents[2]
RECORDED = REPO / "tests" / "recorded" / "h200-onebox-host-sglang-0.5.15.post1"
SCENARIO = "onebox-qwen25-0.5b"
PUBLISHED = load_scenario("h20-qwen3-235b-1p1d")


def _copy(tmp_path: Path) -> Path:
    return copy_run(tmp_path, RECORDED)


def _check(run: Path, capsys, scenario: str = SCENARIO) -> tuple[int, str, str]:
    rc = main(["check", str(run), "--scenario", scenario])
    out, err = capsys.readouterr()
    return rc, out, err


def test_the_recorded_runs_requests_all_fall_in_the_windows_the_sweep_measured(tmp_path, capsys):
    assert _check(_copy(tmp_path), capsys)[0] == 0


def test_requests_logged_outside_the_window_of_their_length_refuse_the_run(tmp_path, capsys):
    run = _copy(tmp_path)
    state = json.loads((run / "sweep-state.json").read_text())
    # The sweep measured 4096 an hour later than the log served it: the log is not of this sweep's 4096.
    state["lengths"]["4096"]["at"] = "2026-12-01T10:34:56+0000"
    (run / "sweep-state.json").write_text(json.dumps(state))
    rc, _, err = _check(run, capsys)
    assert rc == 2 and len(err.strip().splitlines()) == 1, err
    assert "prefill.log: 10 of the 10 requests of length 4096" in err and "outside the 10:34:27-10:34:56+0000" in err


def test_the_window_reads_the_log_in_the_sweep_hosts_zone_too(tmp_path, capsys):
    run = _copy(tmp_path)
    state = json.loads((run / "sweep-state.json").read_text())
    # The same instants written by a sweep host two hours east of UTC, whose servers log its local time:
    # every log time is then two hours ahead of UTC, and still inside.
    for record in state["lengths"].values():
        record["at"] = record["at"].replace("T09:", "T11:").replace("+0000", "+0200")
    (run / "sweep-state.json").write_text(json.dumps(state))
    log = run / "logs" / "prefill.log"
    log.write_text(log.read_text().replace("[2026-12-01 09:", "[2026-12-01 11:"))
    assert _check(run, capsys)[0] == 0


def test_a_malformed_window_is_refused_not_ignored(tmp_path, capsys):
    run = _copy(tmp_path)
    state = json.loads((run / "sweep-state.json").read_text())
    state["lengths"]["128"]["seconds"] = "25.8"
    (run / "sweep-state.json").write_text(json.dumps(state))
    rc, _, err = _check(run, capsys)
    assert rc == 2 and "lengths.128.seconds: is '25.8'" in err and len(err.strip().splitlines()) == 1


def test_a_server_started_again_after_the_sweep_refuses_the_run(tmp_path, capsys):
    run = _copy(tmp_path)
    log = run / "logs" / "decode.log"
    start = next(line for line in log.read_text().splitlines() if "server_args=ServerArgs(" in line)
    # `pdrepro stack up` into the same folder after the sweep: the log grows a start that served nothing of it.
    with log.open("a") as f:
        f.write(start.replace("[2026-12-01 09:", "[2026-12-01 12:") + "\n")
    rc, _, err = _check(run, capsys)
    assert rc == 2 and len(err.strip().splitlines()) == 1, err
    assert "decode.log: the server started again at line" in err and "after the last request it served" in err


@pytest.mark.parametrize("provenance, words", [
    (None, "no readable provenance.json"),
    ({}, "no readable provenance.json"),
    ("not json", "no readable provenance.json"),
    ("no versions", "records no version of any component"),
])
def test_a_gated_run_that_cannot_show_what_ran_fails_pins_match(tmp_path, capsys, provenance, words):
    prov = sweep_provenance(PUBLISHED)
    if provenance == "no versions":
        del prov["versions"], prov["server_info"]
    run = build_run(tmp_path / "run", PUBLISHED, provenance=prov if provenance == "no versions" else
                    (None if provenance == "not json" else provenance))
    if provenance == "not json":
        run.provenance_file.write_text("{not json")
    bad = [r for r in failed(evaluate(load_or_analyze(run, PUBLISHED), PUBLISHED)) if r.name == "pins_match"]
    assert bad and words in bad[0].detail
    rc, out, _ = _check(run.root, capsys, PUBLISHED.name)
    assert rc == 1 and any(line.startswith("FAIL ") and words in line for line in out.splitlines()), out


def test_the_builders_sweep_provenance_passes_pins_match(tmp_path):
    run = build_run(tmp_path / "run", PUBLISHED)
    results = evaluate(load_or_analyze(run, PUBLISHED), PUBLISHED)
    assert [r.verdict for r in results if r.name == "pins_match"] == ["PASS"]


def test_the_gates_fail_a_gated_run_without_provenance_as_check_does(tmp_path):
    run = build_run(tmp_path / "run", PUBLISHED, provenance=None)
    proc = subprocess.run([sys.executable, "-m", "pytest", "repro/", "--run-dir", str(run.root), "-p", "no:cacheprovider",
                           "-q", "--no-cov", "-p", "no:xdist"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stdout[-2000:]
    assert "test_pins_match" in proc.stdout and "no readable provenance.json" in proc.stdout
