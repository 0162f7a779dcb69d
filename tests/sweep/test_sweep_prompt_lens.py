"""`--prompt-lens` narrows a sweep, as a user runs it: `pdrepro stack up` of the stand-in stack, `pdrepro sweep
--prompt-lens 128,1024` against it (real processes on 127.0.0.1, the stand-in bench client in place). The run
records the lengths it ran (its scenario.yaml, and so its summary), `pdrepro check` judges it by them (it passes
with two of the scenario's four lengths), and the same run missing one of its recorded lengths fails; a length
the scenario does not name is refused before anything starts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml
from stackhelp import REPO, env, python_on_path, site, stack, sweep_standin, up

__all__ = ["site"]  # the fixture



def _check(run: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pdrepro", "check", str(run), "--json"], capture_output=True,
                          text=True, env=env(), timeout=120, cwd=REPO)


def test_a_narrowed_sweep_records_its_lengths_and_is_judged_by_them(site):
    env_ = env(PATH=python_on_path(site["tmp"]), STANDIN_CHILD="none")
    run = site["run"]
    # A length the scenario does not name: one line, exit 2, before the sweep reaches for the stack.
    refused = subprocess.run([sys.executable, "-m", "pdrepro", "sweep", "--scenario", site["options"][1], "--router",
                              "http://127.0.0.1:9", "--out", str(run / "x"), "--model-path", str(site["model"]),
                              "--dataset-path", "/nonexistent.json", "--prompt-lens", "128,100"],
                             capture_output=True, text=True, env=env_, timeout=120, cwd=REPO)
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert "--prompt-lens 128,100" in refused.stderr and "128,1024,4096,16384" in refused.stderr
    assert not (run / "x").exists()

    started = up(site, env_=env_)
    assert started.returncode == 0, started.stderr
    try:
        swept = sweep_standin(site, "--prompt-lens", "1024,128", env_=env_)
        assert swept.returncode == 0, swept.stdout[-3000:] + swept.stderr[-3000:]
    finally:
        assert stack("down", str(run), "--grace", "1").returncode == 0
    # Only the lengths asked for were measured, and the run records them (in the scenario's order).
    assert sorted(p.name for p in (run / "bench").glob("result-*.jsonl")) == ["result-1024.jsonl", "result-128.jsonl"]
    assert yaml.safe_load((run / "scenario.yaml").read_text())["sweep"]["prompt_lens"] == [128, 1024]
    summary = json.loads((run / "summary.json").read_text())
    assert [row["prompt_len"] for row in summary["rows"]] == [128, 1024]
    checked = _check(run)
    assert checked.returncode == 0, checked.stdout[-3000:] + checked.stderr[-2000:]
    assert json.loads(checked.stdout)  # the verdict for scripts, on standard output

    # The same run without one of the lengths it recorded fails: the judges read the run's lengths, not a list
    # that happens to match what is there.
    (run / "bench" / "result-1024.jsonl").rename(site["tmp"] / "aside.jsonl")
    missing = _check(run)
    assert missing.returncode != 0, missing.stdout[-3000:]
