"""The in-place bench launcher (a sweep already inside the GPU image): a real
child process, its output streamed line by line, its status returned, and a
run past the limit stopped."""

from __future__ import annotations

import logging
import sys
import time

import pytest

from pdrepro.sweep.benchclient import InPlaceLauncher, LengthTimeout


def test_runs_streams_and_returns_the_status(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="pdrepro")
    script = "import sys, os; print('first'); sys.stdout.write('50%\\r100%\\n'); print(os.environ['HF_HUB_OFFLINE']); sys.exit(3)"
    launcher = InPlaceLauncher(env={"HF_HUB_OFFLINE": "1"})
    rc = launcher.run([sys.executable, "-c", script], mounts={tmp_path: True}, timeout_s=30)
    assert rc == 3
    lines = caplog.messages
    assert [line.strip() for line in lines] == ["first", "50%", "100%", "1"]
    assert launcher.last_client_s is not None and launcher.last_client_s > 0
    assert launcher.image_digest()["in_place"] is True


def test_past_the_limit_the_client_is_stopped(tmp_path):
    marker = tmp_path / "still-running"
    script = f"import time, pathlib; time.sleep(3); pathlib.Path({str(marker)!r}).write_text('x')"
    launcher = InPlaceLauncher()
    started = time.monotonic()
    with pytest.raises(LengthTimeout):
        launcher.run([sys.executable, "-c", script], mounts={}, timeout_s=0.5)
    assert time.monotonic() - started < 3
    time.sleep(3.2)
    assert not marker.exists(), "the client outlived the limit"
