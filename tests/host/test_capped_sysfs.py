"""sysfs and /proc are read through the capped reader (core.runfile.read_host): a FIFO or a huge file where the
kernel keeps an attribute is one line naming it and exit 2, never a hang (a FIFO MTU hung `doctor`) or a
MemoryError (a 2.5 GiB one); the commands that read a tree shaped like /sys are run as a user runs them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from sysfs_builder import h20_node

from pdrepro.core import runfile
from pdrepro.core.errors import UserError

HUGE = 5 << 29  # 2.5 GiB, sparse: no disk is spent on it


def _poison(path: Path, how: str) -> None:
    path.unlink()
    if how == "fifo":
        os.mkfifo(path)
    else:
        with path.open("wb") as f:
            f.truncate(HUGE)


COMMANDS = {
    "doctor": ["doctor", "--role", "prefill", "--scenario", "h20-qwen3-235b-1p1d"],
    "ib-devices": ["ib-devices", "--out", "{out}"],
}


@pytest.mark.parametrize("how", ["fifo", "huge"])
@pytest.mark.parametrize("command, attribute", [
    ("doctor", "class/net/ens10np0/mtu"),
    ("doctor", "class/infiniband/mlx5_0/ports/1/rate"),
    ("ib-devices", "class/infiniband/mlx5_1/ports/1/state"),
])
def test_a_fifo_or_a_huge_file_where_an_attribute_belongs_is_one_line_and_exit_2(tmp_path, how, command, attribute):
    h20_node(tmp_path / "sys")
    target = tmp_path / "sys" / attribute
    real = Path(os.path.realpath(target))
    _poison(real, how)
    argv = [a.format(out=tmp_path / "ib_devices.json") for a in COMMANDS[command]]
    proc = subprocess.run([sys.executable, "-m", "pdrepro", *argv, "--sysfs-root", str(tmp_path / "sys")],
                          capture_output=True, text=True, timeout=60, env={**os.environ, "PATH": "/nonexistent"})
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and str(real.name) in lines[0] and "Traceback" not in proc.stdout + proc.stderr, proc.stderr
    assert ("FIFO" in lines[0]) if how == "fifo" else ("2.5 GiB" in lines[0]), lines[0]


def test_a_host_file_is_read_no_further_than_its_cap(tmp_path):
    # /proc files claim a size of 0 whatever they hold: the cap bounds the bytes read, not the size claimed.
    small = runfile.Kind("tiny kernel file", 64, fix="x")
    assert os.stat("/proc/self/status").st_size == 0
    with pytest.raises(runfile.TooLarge, match="more than 0.0 MiB"):
        runfile.read_host("/proc/self/status", small)
    path = tmp_path / "f"
    path.write_text("1" * 64)
    assert runfile.read_host(path, small) == "1" * 64
    path.write_text("1" * 65)
    with pytest.raises(runfile.TooLarge):
        runfile.read_host(path, small)


def test_proc_is_read_as_the_kernel_shows_it():
    assert runfile.read_host("/proc/self/stat", runfile.PROC).startswith(f"{os.getpid()} (")
    assert runfile.read_host_bytes("/proc/self/cmdline", runfile.PROC).split(b"\0")[0]


def test_an_os_error_is_still_an_os_error_to_the_readers_that_take_it_as_no_value(tmp_path):
    # An unused GID slot answers EINVAL; another user's /proc/PID/environ EACCES: callers read None, not exit 2.
    with pytest.raises(OSError):
        runfile.read_host("/proc/self/mem", runfile.PROC)
    with pytest.raises(FileNotFoundError):
        runfile.read_host(tmp_path / "absent")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(UserError) as caught:
        runfile.read_host(fifo)
    assert not isinstance(caught.value, OSError)  # a FIFO is no "no value": it reaches the user
