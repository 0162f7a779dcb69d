"""One reader for run files (issue 22, item 7), under hostile files: any file of a run replaced by a sparse
file of gigabytes, a FIFO, a link to /dev/zero, a line of megabytes, binary junk, an empty file or a folder.
`pdrepro analyze` and `pdrepro check` exit 0, 1 or 2 (one line on 2, no traceback, no MemoryError), end in
seconds, leave the hostile file as it was, and write nothing outside the run.

Each command runs as its own process under an address-space limit well below what reading a 2 GB file whole
costs, so a reader that does (the fault fixed: a stray file was read to the end) is a failure here, not a
machine out of memory. The strategy would have found it: a 2 GB record used to be read whole."""

from __future__ import annotations

import os
import random
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from depth import examples
from hypothesis import example, given, settings
from hypothesis import strategies as st

TESTS = Path(__file__).resolve().parents[1]
# Files of a run the readers take, by kind: records, a bench result, a log, the scenario, a metrics scrape.
TARGETS = ("provenance.json", "sweep-state.json", "baseline.json", "counters/128.json", "summary.json",
           "bench/result-128.jsonl", "logs/prefill.log", "logs/decode.log", "scenario.yaml")
SHAPES = ("sparse-2g", "fifo", "dev-zero", "long-line", "junk", "empty", "folder")
ADDRESS_SPACE = 3 << 30  # the analysis needs well under 1 GiB; a 2 GB file read whole needs more than this


def _limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def _make(path: Path, shape: str, seed: int) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    elif os.path.lexists(path):
        path.unlink()
    path.parent.mkdir(parents=True, exist_ok=True)
    if shape == "sparse-2g":
        with open(path, "wb") as fh:
            fh.truncate(2 << 30)
    elif shape == "fifo":
        os.mkfifo(path)
    elif shape == "dev-zero":
        path.symlink_to("/dev/zero")
    elif shape == "long-line":
        path.write_bytes(b"{" + b"x" * (3 << 20) + b"\n")
    elif shape == "junk":
        path.write_bytes(random.Random(seed).randbytes(64 << 10))
    elif shape == "empty":
        path.write_bytes(b"")
    else:
        path.mkdir()


def _state(path: Path) -> tuple:
    st_ = os.lstat(path)
    return st_.st_mode, st_.st_size, st_.st_mtime_ns


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    from runbuilder import build_run

    from pdrepro.scenario.model import load_scenario

    root = tmp_path_factory.mktemp("template")
    build_run(root / "run", load_scenario("h20-qwen3-235b-1p1d"), provenance={"schema_version": 1})
    return root / "run"


@settings(max_examples=examples(3))
@given(target=st.sampled_from(TARGETS), shape=st.sampled_from(SHAPES), command=st.sampled_from(("analyze", "check")),
       seed=st.integers(0, 1000))
@example(target="provenance.json", shape="sparse-2g", command="check", seed=0)  # the fault fixed
@example(target="logs/prefill.log", shape="fifo", command="analyze", seed=0)
@example(target="counters/128.json", shape="fifo", command="check", seed=0)  # hung: taken for no record first
def test_a_hostile_run_file_is_one_line_never_a_crash(template, tmp_path_factory, target, shape, command, seed):
    root = tmp_path_factory.mktemp("huge")
    run = root / "run"
    shutil.copytree(template, run)
    _make(run / target, shape, seed)
    before = _state(run / target)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])}
    try:
        proc = subprocess.run([sys.executable, "-m", "pdrepro", command, str(run)], capture_output=True, text=True,
                              timeout=90, preexec_fn=_limit, env=env)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{command} hung on {target} as {shape}")
    assert proc.returncode in (0, 1, 2), proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr and "MemoryError" not in proc.stderr, proc.stderr[-3000:]
    if proc.returncode == 2:
        errors = [line for line in proc.stderr.splitlines() if line.startswith(f"pdrepro {command}: error:")]
        assert len(errors) == 1, proc.stderr[-3000:]
    if shape != "folder" and not (command == "analyze" and target == "summary.json"):
        assert _state(run / target) == before, "the hostile file was changed"  # analyze rewrites only its summary
    assert sorted(p.name for p in root.iterdir()) == ["run"], "something was written beside the run"
