"""`pdrepro render` never damages what it does not own: it does not write through a symlink planted in
--out, over a directory, or into a read-only folder without one line naming the path; a full disk is named
as such; --ib-devices may point inside --out (the copy is the file itself)."""

from __future__ import annotations

import errno
import json
import os
import subprocess

import pytest
from clihelp import assert_one_line_error, pdrepro

ARGS = ["render", "--scenario", "h20-qwen3-235b-1p1d", "--prefill-ip", "192.0.2.10", "--decode-ip", "192.0.2.20"]
IB = json.dumps({str(g): f"mlx5_{g // 2}" for g in range(8)})


def test_a_symlink_in_out_is_not_written_through(tmp_path):
    out = tmp_path / "deploy"
    out.mkdir()
    victim = tmp_path / "precious.txt"
    victim.write_text("mine")
    (out / "prefill.env").symlink_to(victim)
    line = assert_one_line_error(pdrepro(*ARGS, "--out", out), "render", str(out / "prefill.env"), "symlink")
    assert str(victim) in line
    assert victim.read_text() == "mine"


def test_a_directory_where_a_file_goes_is_named(tmp_path):
    out = tmp_path / "deploy"
    (out / "decode.env").mkdir(parents=True)
    (out / "decode.env" / "keep").write_text("x")
    assert_one_line_error(pdrepro(*ARGS, "--out", out), "render", str(out / "decode.env"), "directory")
    assert (out / "decode.env" / "keep").read_text() == "x"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_out_is_named(tmp_path):
    out = tmp_path / "deploy"
    out.mkdir()
    out.chmod(0o555)
    try:
        assert_one_line_error(pdrepro(*ARGS, "--out", out), "render", str(out), "writable")
    finally:
        out.chmod(0o755)


def test_a_read_only_out_is_named_even_for_root(tmp_path, monkeypatch):
    # Root ignores the mode bits, so the refusal a user gets is played by the OS call itself.
    out = tmp_path / "deploy"
    out.mkdir()
    real = os.open

    def refuse(path, flags, *args, **kw):
        if str(path).startswith(str(out)) and flags & os.O_CREAT:
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real(path, flags, *args, **kw)

    monkeypatch.setattr(os, "open", refuse)
    line = assert_one_line_error(pdrepro(*ARGS, "--out", out), "render", str(out), "Permission denied")
    assert "writable" in line


@pytest.fixture
def full_disk(tmp_path):
    """A real file system with no space left: a one-page tmpfs, filled. Mounting needs root (CAP_SYS_ADMIN)."""
    mount = tmp_path / "full"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4k", "tmpfs", str(mount)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        (mount / "deploy").mkdir()
        with open(mount / "filler", "wb") as fh:
            try:
                fh.write(b"x" * 65536)
                fh.flush()
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def test_a_full_disk_says_the_disk_is_full(full_disk):
    out = full_disk / "deploy"
    line = assert_one_line_error(pdrepro(*ARGS, "--out", out), "render", "the disk is full", "free space")
    assert "chmod" not in line and "writable" not in line
    assert not list(out.glob(".*.tmp"))


def test_ib_devices_inside_out_works(tmp_path):
    out = tmp_path / "deploy"
    out.mkdir()
    ib = out / "ib_devices.json"
    ib.write_text(IB)
    result = pdrepro(*ARGS, "--ib-devices", ib, "--out", out)
    assert result.rc == 0, result.err
    assert json.loads(ib.read_text()) == json.loads(IB)
    assert f"IB_DEVICES_FILE={ib}" in (out / "prefill.env").read_text().splitlines()


def test_ib_devices_symlinked_into_out_keeps_its_target(tmp_path):
    out = tmp_path / "deploy"
    out.mkdir()
    real = tmp_path / "site-ib.json"
    real.write_text(IB)
    (out / "ib_devices.json").symlink_to(real)
    result = pdrepro(*ARGS, "--ib-devices", out / "ib_devices.json", "--out", out)
    assert result.rc == 0, result.err
    assert real.read_text() == IB and (out / "ib_devices.json").is_symlink()


def test_rendering_twice_replaces_its_own_files(tmp_path):
    out = tmp_path / "deploy"
    assert pdrepro(*ARGS, "--out", out).rc == 0
    first = sorted(p.name for p in out.iterdir())
    assert pdrepro(*ARGS, "--out", out).rc == 0
    assert sorted(p.name for p in out.iterdir()) == first


def test_a_run_result_written_on_a_full_disk_says_so(full_disk):
    # The analysis' own writes (summary.json, report.md) share the message: no chmod advice for ENOSPC.
    from pdrepro.core.errors import UserError
    from pdrepro.rundir.contract import write_atomic

    with pytest.raises(UserError, match="the disk is full") as info:
        write_atomic(full_disk / "deploy" / "summary.json", "x" * 65536)
    assert "chmod" not in str(info.value)
