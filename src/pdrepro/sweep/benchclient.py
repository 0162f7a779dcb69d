"""Runs the bench client. The sweep takes any object with this ``run`` method,
so the cluster tests hand it their own; the product ships the Docker one.

The client runs inside the GPU image so that its SGLang matches the servers'.
Host paths are mounted at the same paths inside the container, so the argv
built by ``benchcmd`` is valid on either side.

The client's own output (its progress bars, its warnings) goes to the run's log, RUN/logs/bench-client.log
(``output_to``), not to the console, which keeps the bundle's own lines.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol

from ..core import signals
from ..core.errors import UserError
from ..core.safewrite import make_folder, open_log
from ..host import docker as docker_engine

log = logging.getLogger(__name__)
# The client's own lines: kept off the console's handler (on "pdrepro"), written where ``output_to`` says.
client_output = logging.getLogger("pdrepro.bench_client_output")
client_output.propagate = False
client_output.setLevel(logging.INFO)

# The client's output in a run, beside the server logs.
LOG_NAME = "bench-client.log"


class _ToFile(logging.Handler):
    """Each line as it comes, flushed (a client killed half-way leaves what it printed)."""

    def __init__(self, stream) -> None:
        super().__init__()
        self.stream = stream

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.stream.write((record.getMessage() + "\n").encode("utf-8", errors="replace"))
            self.stream.flush()
        except (OSError, ValueError):  # a full disk, a closed file: the measurement goes on without its log
            self.handleError(record)


@contextlib.contextmanager
def output_to(logs_dir: Path, header: str) -> Iterator[Path]:
    """The client's output appended to LOGS_DIR/bench-client.log while inside, under a ``header`` line naming
    what ran; the folder or the file planted as a link is refused (one line), never written through."""
    if logs_dir.is_symlink():
        raise UserError(f"{logs_dir}: is a symlink; the sweep does not write the bench client's log through a link "
                        "it did not make: remove the link")
    make_folder(logs_dir, "the sweep")
    path = logs_dir / LOG_NAME
    with open_log(path, "the sweep", append=True) as stream:
        handler = _ToFile(stream)
        client_output.addHandler(handler)
        try:
            client_output.info(f"==== {header}")
            yield path
        finally:
            client_output.removeHandler(handler)

# The label naming the host folder a bench container writes into (the run directory).
WRITES_LABEL = "pdrepro.writes"


class LengthTimeout(Exception):
    """The client ran past the per-length limit and was stopped."""


class BenchLauncher(Protocol):
    def run(self, argv: list[str], *, mounts: dict[Path, bool], timeout_s: float | None) -> int:
        """Runs argv to completion; returns its exit status. ``mounts``: host
        path -> writable. Raises LengthTimeout past ``timeout_s``; on
        KeyboardInterrupt stops the client before re-raising."""


class DockerLauncher:
    """``docker run --rm --network host`` of the bench client in ``image``."""

    def __init__(self, image: str, env: dict[str, str] | None = None, client=None, name_prefix: str = "pdrepro-bench"):
        self.image = image
        self.env = dict(env or {})
        self._client = client
        self.name_prefix = name_prefix
        self.last_client_s: float | None = None

    @property
    def client(self):
        if self._client is None:
            try:
                self._client = docker_engine.connect()
            except docker_engine.EngineUnreachable as exc:
                raise UserError(f"cannot reach the Docker engine ({exc.kind}); "
                                "start dockerd or set DOCKER_HOST") from None
        return self._client

    def image_digest(self) -> dict:
        try:
            image = self.client.images.get(self.image)
        except Exception as exc:
            return {"image": self.image, "error": type(exc).__name__}
        return {"image": self.image, "id": image.id, "repo_digests": image.attrs.get("RepoDigests", [])}

    def run(self, argv, *, mounts, timeout_s):
        client = self.client
        try:
            client.images.get(self.image)
        except Exception:
            raise UserError(f"image {self.image} is not on this host; build it (make build) or pass --image") from None
        self.last_client_s = None
        volumes = {str(p): {"bind": str(p), "mode": "rw" if rw else "ro"} for p, rw in mounts.items()}
        # Each writable mount is named on the container, so a later sweep of the same run finds a client
        # that a killed sweep (SIGKILL, a lost node) left running, and stops it before starting its own.
        writable = sorted(str(p) for p, rw in mounts.items() if rw)
        labels = {WRITES_LABEL: ":".join(writable)} if writable else {}
        self._stop_orphans(labels)
        container = client.containers.run(
            self.image, argv, detach=True, network_mode="host", volumes=volumes, labels=labels,
            environment=self.env, name=f"{self.name_prefix}-{uuid.uuid4().hex[:12]}",
        )
        stop = threading.Event()
        pump = threading.Thread(target=self._pump, args=(container, stop), daemon=True)
        pump.start()
        try:
            result = _wait_container(container, timeout_s)
            pump.join(timeout=5)
            self.last_client_s = _run_seconds(container)
            return int(result.get("StatusCode", 1))
        finally:
            stop.set()
            try:
                container.remove(force=True)
            except Exception:
                pass

    def _stop_orphans(self, labels: dict[str, str]) -> None:
        """Removes running bench containers that write where this one will: only a sweep that holds the run's
        lock starts a client, so any such container belongs to a sweep that is gone."""
        if not labels:
            return
        try:
            found = self.client.containers.list(all=True, filters={"label": f"{WRITES_LABEL}={labels[WRITES_LABEL]}"})
        except Exception:  # an engine that cannot list: nothing known to stop
            return
        for old in found:
            log.info(f"  stopping bench container {old.name}, left running by an earlier sweep of this run")
            try:
                old.remove(force=True)
            except Exception:
                pass

    @staticmethod
    def _pump(container, stop):
        buf = b""
        for chunk in container.logs(stream=True, follow=True):
            if stop.is_set():
                break
            buf += chunk
            # tqdm redraws with \r: show each redraw as a line of progress.
            while True:
                cut = min((i for i in (buf.find(b"\n"), buf.find(b"\r")) if i >= 0), default=-1)
                if cut < 0:
                    break
                line, buf = buf[:cut], buf[cut + 1:]
                if line.strip():
                    client_output.info(line.decode(errors="replace").rstrip())


class InPlaceLauncher:
    """The bench client as a child process, for a sweep that already runs in
    the GPU image (a Kubernetes Job, a SLURM step in the container): no
    engine to ask, and the mounts are already there."""

    def __init__(self, env: dict[str, str] | None = None):
        self.env = dict(env or {})
        self.last_client_s: float | None = None

    def image_digest(self) -> dict:
        import sys

        return {"image": None, "in_place": True, "python": sys.executable}

    def run(self, argv, *, mounts, timeout_s):
        import os
        import subprocess
        import time

        self.last_client_s = None
        start = time.monotonic()
        # Its own session: a terminal's Ctrl-C or a closed ssh session reaches the sweep, which stops the
        # client's whole group (its worker processes too); and the client dies with the sweep if the sweep
        # is killed outright, so a resume never finds a second client still writing.
        signals.checkpoint()  # a signal that came before the client: no client
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env={**os.environ, **self.env},
                                start_new_session=True, preexec_fn=signals.die_with_parent)
        # From here the first signal kills the client's group from the handler itself (a kill takes no lock);
        # the wait below then sees the client gone and raises at its own safe point.
        with signals.stopping(lambda: _signal_group(proc.pid)):
            pump = threading.Thread(target=self._pump, args=(proc.stdout,), daemon=True)
            pump.start()
            try:
                rc = _wait_child(proc, timeout_s)
            finally:
                _kill_group(proc)
                pump.join(timeout=5)
        signals.checkpoint()  # a signal during the clean-up above: the length is not done
        self.last_client_s = time.monotonic() - start
        return rc

    @staticmethod
    def _pump(stream):
        # tqdm redraws with \r: show each redraw as a line of progress.
        for raw in iter(lambda: stream.readline(), b""):
            for line in raw.replace(b"\r", b"\n").split(b"\n"):
                if line.strip():
                    client_output.info(line.decode(errors="replace").rstrip())


def _signal_group(pid: int) -> None:
    """SIGKILL to the client's session (its group: the client made it with start_new_session). Called from
    the signal handler too, so it only makes the one system call. The client is not reaped yet, so its id
    (and its group's) cannot have been given to another process."""
    import os
    import signal

    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _kill_group(proc) -> None:
    """Kills the client and every process of its session, then reaps it."""
    _signal_group(proc.pid)
    if proc.poll() is None:
        proc.kill()
    proc.wait()


def _wait_child(proc, timeout_s: float | None) -> int:
    """The client's exit status, waited for in short slices so a signal is acted on at once (a safe point:
    no lock is held between two slices); LengthTimeout past ``timeout_s``."""
    import subprocess
    import time

    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while True:
        signals.checkpoint()
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            raise LengthTimeout(f"bench client ran past {timeout_s:.0f} s")
        try:
            return proc.wait(timeout=signals.POLL_S if left is None else min(signals.POLL_S, left))
        except subprocess.TimeoutExpired:
            continue


def _wait_container(container, timeout_s: float | None) -> dict:
    """The engine's answer to waiting for ``container``, asked on a thread so the sweep's thread stays at
    a safe point it leaves on a signal (the caller's ``finally`` then removes the container)."""
    outcome: dict = {}

    def wait() -> None:
        try:
            outcome["result"] = container.wait(timeout=timeout_s)
        except BaseException as exc:  # handed to the sweep's thread below
            outcome["error"] = exc

    waiter = threading.Thread(target=wait, name="bench-wait", daemon=True)
    waiter.start()
    while waiter.is_alive():
        waiter.join(signals.POLL_S)
        signals.checkpoint()
    exc = outcome.get("error")
    if exc is not None:
        timeout_type = type(exc).__name__ in ("ReadTimeout", "ConnectionError", "ReadTimeoutError")
        if "timed out" in str(exc).lower() or timeout_type:
            raise LengthTimeout(f"bench client ran past {timeout_s:.0f} s") from None
        raise exc
    return outcome["result"]


def _run_seconds(container) -> float | None:
    """The container's own run time, from the engine's start and finish stamps."""
    from datetime import datetime

    try:
        container.reload()
        state = container.attrs["State"]
        start, end = (datetime.fromisoformat(state[k][:26].rstrip("Z") + "+00:00") for k in ("StartedAt", "FinishedAt"))
    except Exception:
        return None
    seconds = (end - start).total_seconds()
    return seconds if seconds >= 0 else None
