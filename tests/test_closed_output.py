"""A closed standard output ends any command quietly: `pdrepro knobs | head -1` and the like leave nothing on
stderr (no traceback, no "Exception ignored" from the interpreter's exit) and end with the command's own status
or 141, the one a shell shows for SIGPIPE. Real processes, real pipes whose reader is gone."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from recordedrun import copy_run

PDREPRO = [sys.executable, "-m", "pdrepro"]


def _with_reader_gone(argv: list[str], cwd=None) -> subprocess.CompletedProcess:
    """ARGV run with its standard output a pipe whose reading end is closed before it writes a byte."""
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run(argv, stdout=write, stderr=subprocess.PIPE, text=True, timeout=120, cwd=cwd)
    finally:
        os.close(write)


@pytest.mark.parametrize("args", [
    ["--help"],
    ["check", "--help"],
    ["knobs"],
    ["scenarios", "list"],
    ["scenarios", "show", "onebox-qwen25-0.5b"],
    ["schema", "scenario"],
])
def test_a_command_whose_reader_is_gone_ends_quietly(args):
    proc = _with_reader_gone(PDREPRO + args)
    assert proc.stderr == "", proc.stderr
    assert proc.returncode in (0, 141), proc.returncode


def test_judging_a_run_into_a_closed_pipe_ends_quietly_with_its_status(tmp_path):
    # check writes its verdict lines through print and the console logger alike; both meet the closed pipe.
    run = copy_run(tmp_path)
    proc = _with_reader_gone(PDREPRO + ["check", str(run)])
    assert proc.stderr == "", proc.stderr
    assert proc.returncode == 141


def test_head_takes_the_first_line_and_the_command_says_nothing_more():
    # As a user types it: the command outlives head's exit and its later writes fail.
    proc = subprocess.run(["bash", "-c", 'set -o pipefail; "$@" | head -1; echo "status ${PIPESTATUS[0]}" >&2',
                           "sh", *PDREPRO, "knobs"], capture_output=True, text=True, timeout=120)
    assert proc.stdout.count("\n") == 1 and proc.stdout.startswith("sglang (engine)"), proc.stdout
    assert proc.stderr in ("status 0\n", "status 141\n"), proc.stderr


def test_an_open_output_keeps_the_commands_status():
    proc = subprocess.run(PDREPRO + ["scenarios", "show", "no-such-scenario"], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
