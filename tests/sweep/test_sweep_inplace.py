"""The in-place bench launcher (a sweep already inside the GPU image): a real
child process, its output streamed line by line, its status returned, and a
run past the limit stopped."""

from __future__ import annotations

import logging
import sys
import time

import pytest

from pdrepro.core import console
from pdrepro.sweep.benchclient import InPlaceLauncher, LengthTimeout, output_to


def test_runs_streams_and_returns_the_status(tmp_path, capsys):
    # The client's own lines go to the run's log, each redraw a line, and not to the console.
    console.setup()
    script = "import sys, os; print('first'); sys.stdout.write('50%\\r100%\\n'); print(os.environ['HF_HUB_OFFLINE']); sys.exit(3)"
    launcher = InPlaceLauncher(env={"HF_HUB_OFFLINE": "1"})
    with output_to(tmp_path / "logs", "prompt length 128") as path:
        rc = launcher.run([sys.executable, "-c", script], mounts={tmp_path: True}, timeout_s=30)
    assert rc == 3
    assert path.read_text().splitlines() == ["==== prompt length 128", "first", "50%", "100%", "1"]
    assert capsys.readouterr().out == ""
    logging.getLogger("pdrepro.sweep").info("a line of the bundle's own")  # which the console does print
    assert capsys.readouterr().out == "a line of the bundle's own\n"
    assert launcher.last_client_s is not None and launcher.last_client_s > 0
    assert launcher.image_digest()["in_place"] is True


def test_the_clients_log_appends_and_refuses_a_planted_link(tmp_path):
    from pdrepro.core.errors import UserError

    for header in ("prompt length 128", "prompt length 256"):
        with output_to(tmp_path / "logs", header):
            pass
    assert (tmp_path / "logs" / "bench-client.log").read_text().splitlines() == ["==== prompt length 128",
                                                                                 "==== prompt length 256"]
    elsewhere = tmp_path / "elsewhere.log"
    elsewhere.write_text("theirs\n")
    (tmp_path / "linked").mkdir()
    (tmp_path / "linked" / "bench-client.log").symlink_to(elsewhere)
    with pytest.raises(UserError, match="symlink"):
        with output_to(tmp_path / "linked", "prompt length 128"):
            pass
    (tmp_path / "dirlink").symlink_to(tmp_path / "linked")
    with pytest.raises(UserError, match="symlink"):
        with output_to(tmp_path / "dirlink", "prompt length 128"):
            pass
    assert elsewhere.read_text() == "theirs\n"


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
