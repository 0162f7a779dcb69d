"""A test fixture, run as its own process by test_sweep_signals.py: `pdrepro sweep` through the real CLI
against a FakeCluster, with the bench client swapped for a fake client (named so) that appends a line to
its --output-file every 50 ms until it is stopped, so the test can tell whether anything still writes into
the run after the sweep ended. argv: TMP LAUNCHER(child|child-masked|docker|silent) [IMAGE|WAIT_TIMEOUT].

silent: every URL is a real listening socket on 127.0.0.1 that takes connections and never answers (a server
hung while it loads, a port behind a firewall that swallows packets), so the sweep sits in its wait for the
stack: within its requests, not between them. The third word is --wait-timeout (default 20).

child-masked: the main thread blocks SIGTERM, SIGINT and SIGHUP, and one thread started before that (and
doing nothing) is the only one that may take them, as the kernel may choose any thread for a signal sent to
the process: the Python handler then runs only when the main thread next runs Python code, never while it
sits in a blocking system call (the sweep's old wait on the client, which hung).
"""

from __future__ import annotations

import signal
import socket
import sys
import threading
from pathlib import Path

from fakecluster import FakeCluster
from sweephelp import dataset, short_scenario

import pdrepro.sweep.step as step
from pdrepro.cli import main

FAKE_CLIENT = (
    "import sys, time\n"
    "out = sys.argv[1]\n"
    "while True:\n"
    "    with open(out, 'a') as fh:\n"
    "        fh.write('still writing\\n')\n"
    "    time.sleep(0.05)\n"
)


def _fake_client_argv(scenario, prompt_len, target, output_file):
    return ["python3", "-c", FAKE_CLIENT, str(output_file)]


def silent(tmp: Path, wait_timeout: str) -> int:
    scenario = short_scenario()
    scenario_file = tmp / "scenario.yaml"
    scenario_file.write_text(scenario.to_yaml())
    model = tmp / "models" / scenario.model.name
    model.mkdir(parents=True, exist_ok=True)
    (tmp / "logs").mkdir(exist_ok=True)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(64)  # the kernel completes the connections; no one ever reads or answers them
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        args = ["sweep", "--scenario", scenario_file, "--router", url, "--prefill", url, "--decode", url,
                "--out", tmp / "run", "--model-path", model, "--dataset-path", dataset(tmp), "--logs-from",
                tmp / "logs", "--no-analyze", "--wait-timeout", wait_timeout, "--bench-in-place"]
        print("SILENT waiting", flush=True)
        return main([str(a) for a in args])


def run(tmp: Path, launcher: str, image: str | None) -> int:
    if launcher == "silent":
        return silent(tmp, image or "20")
    step.bench_argv = _fake_client_argv
    scenario = short_scenario()
    scenario_file = tmp / "scenario.yaml"
    scenario_file.write_text(scenario.to_yaml())
    model = tmp / "models" / scenario.model.name
    model.mkdir(parents=True, exist_ok=True)
    with FakeCluster(tmp, scenario) as cluster:
        args = ["sweep", "--scenario", scenario_file, "--router", cluster.router.url,
                "--prefill", cluster.prefill.url, "--decode", cluster.decode.url, "--out", tmp / "run",
                "--model-path", model, "--dataset-path", dataset(tmp), "--logs-from", cluster.log_dir,
                "--no-analyze", "--wait-timeout", "20"]
        args += ["--bench-in-place"] if launcher.startswith("child") else ["--image", image]
        if launcher == "child-masked":
            threading.Thread(target=threading.Event().wait, daemon=True).start()
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT, signal.SIGHUP})
        return main([str(a) for a in args])


if __name__ == "__main__":
    sys.exit(run(Path(sys.argv[1]), sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None))
