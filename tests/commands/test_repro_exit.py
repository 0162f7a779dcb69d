"""`pytest repro/` keeps the CLI's exit-code promise for bad input: 2 and one line naming what to fix."""

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _gates(*args):
    return subprocess.run([sys.executable, "-m", "pytest", "repro/", "-p", "no:cacheprovider", "-p", "no:xdist",
                           *map(str, args)], cwd=REPO, capture_output=True, text=True, timeout=180)


@pytest.mark.parametrize("args, needle", [
    ((), "pass --run-dir RUN"),
    (("--run-dir", "{tmp}/no-such-run"), "no such folder"),
    (("--run-dir", "{tmp}", "--scenario", "no-such-scenario"), "unknown scenario 'no-such-scenario'"),
])
def test_bad_input_exits_2_with_one_line(tmp_path, args, needle):
    proc = _gates(*[a.format(tmp=tmp_path) for a in args])
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-1000:])
    assert "Traceback" not in proc.stdout + proc.stderr
    lines = [l for l in (proc.stdout + proc.stderr).splitlines() if needle in l]
    assert len(lines) == 1, proc.stdout[-1000:] + proc.stderr[-1000:]
