"""A stray 2 GB file where a run's file belongs (a sparse file: it costs no disk) is one line naming it and
exit 2, read no further than its size: never a MemoryError, never minutes spent reading it. Each kind of file
has its cap (pdrepro.core.runfile): JSON records 16 MiB, bench results 512 MiB; logs are streamed, and a 2 GB
run of zero bytes is no line of a log."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from runbuilder import build_run

from pdrepro.core.errors import UserError
from pdrepro.scenario.model import load_scenario

SCENARIO = load_scenario("h20-qwen3-235b-1p1d")
HUGE = 2 << 30


def _sparse(path, size=HUGE):
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        path.unlink()
    with open(path, "wb") as fh:
        fh.truncate(size)


@pytest.fixture
def run(tmp_path):
    return build_run(tmp_path / "run", SCENARIO)


@pytest.mark.parametrize("name, read", [
    ("sweep-state.json", lambda r: r.read_sweep_state()),
    ("counters/128.json", lambda r: r.read_counters(128)),
    ("baseline.json", lambda r: r.read_baseline()),
    ("provenance.json", lambda r: r.read_provenance()),
    ("summary.json", lambda r: r.read_stored_summary()),
])
def test_each_json_record_reader_refuses_a_2_gb_file_by_its_size(run, name, read):
    _sparse(run.root / name)
    t0 = time.monotonic()
    with pytest.raises(UserError) as info:
        read(run)
    message = str(info.value)
    assert str(run.root / name) in message and "larger than any JSON record" in message and "\n" not in message
    assert time.monotonic() - t0 < 2, "the file was read, not refused by its size"


@pytest.mark.parametrize("name, command, needle", [
    ("provenance.json", "analyze", "larger than any JSON record"),
    ("bench/result-128.jsonl", "analyze", "larger than any bench result"),
    ("logs/prefill.log", "analyze", "longer than 1.0 MiB"),
    ("scenario.yaml", "analyze", "larger than any scenario file"),
    ("summary.json", "check", "larger than any JSON record"),
])
def test_a_2_gb_stray_file_is_one_line_and_exit_2(run, name, command, needle):
    _sparse(run.root / name)
    proc = subprocess.run([sys.executable, "-m", "pdrepro", command, str(run.root)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2, proc.stderr[-2000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith(f"pdrepro {command}: error:")]
    assert len(errors) == 1 and str(run.root / name) in errors[0] and needle in errors[0], proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr and "MemoryError" not in proc.stderr
    assert os.path.getsize(run.root / name) == HUGE  # judged, not rewritten


@pytest.mark.parametrize("shape", ["fifo", "folder", "dangling link"])
@pytest.mark.parametrize("name, read", [
    ("sweep-state.json", lambda r: r.read_sweep_state()),
    ("counters/128.json", lambda r: r.read_counters(128)),
    ("baseline.json", lambda r: r.read_baseline()),
    ("provenance.json", lambda r: r.read_provenance()),
])
def test_something_not_a_file_where_a_record_belongs_is_refused_not_taken_for_no_record(run, name, read, shape):
    path = run.root / name
    path.unlink(missing_ok=True)
    if shape == "fifo":
        os.mkfifo(path)
    elif shape == "folder":
        path.mkdir()
    else:
        path.symlink_to(run.root / "gone.json")
    with pytest.raises(UserError) as info:
        read(run)
    assert str(path) in str(info.value) and "\n" not in str(info.value)
