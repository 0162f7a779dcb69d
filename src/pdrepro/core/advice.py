"""The command lines the bundle prints as advice (in an error, a note or a report), built in one place.

A line a user is told to run must run as printed: its words shell-quoted (a run folder with a space stays one
word), its flags ones the command takes, its choices valid and its required inputs given (a gpu-check hint names
the scenario whose bytes it must move). Each message takes its line from a builder here, and ``examples()``
gives every builder's line, which tests/commands/test_cli_advice.py parses against the real command line.

Where the message cannot know a value it prints a placeholder from ``PLACEHOLDERS``, each one word in capitals
a reader replaces (a report is read after its folder moved, so it names the run as RUN)."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from pathlib import Path

# The placeholders a printed line may hold, with what the reader puts in their place.
RUN = "RUN"
PEER = "PEER"
PLACEHOLDERS = {RUN: "the run folder the message or report is about (a report names its own folder so)",
                PEER: "the other node's address (the node running `pdrepro baseline --role server`)"}
# The engine alone measured as a run's transfers are timed: one request's KV in one block and per layer.
ENGINE_LAYOUTS = "one,layers"
# What `gpu-check --transport` takes; a recorded transport that is none of them is left out of a line, not printed.
TRANSPORTS = ("auto", "tcp", "rdma")


def pdrepro(*words: str | Path) -> str:
    """``pdrepro`` and ``words``, each quoted for a POSIX shell where it needs it."""
    return shlex.join(["pdrepro", *(str(w) for w in words)])


def make(target: str) -> str:
    return shlex.join(["make", target])


def analyze(run: str | Path) -> str:
    """Writes the run's summary.json and report from its inputs."""
    return pdrepro("analyze", run)


def check(run: str | Path) -> str:
    """Judges a run (any kind) and writes nothing."""
    return pdrepro("check", run)


def judge(command: str, run: str | Path) -> str:
    """A runner's re-judging of its run (`ab`, `tune`, `compare`): reads only."""
    return pdrepro(command, "--judge", run)


def gpu_check(scenario: str | Path, out: str | Path, transport: str | None = None) -> str:
    """The engine alone on this box, moving the bytes ``scenario``'s requests move, into ``out``: the ceiling a
    run (or a tune) in the folder above ``out`` is set against. Without the scenario gpu-check would move its
    default scenario's bytes, which the run refuses. ``transport`` is one a file recorded: kept when gpu-check
    takes it."""
    words: list[str | Path] = ["gpu-check", "--scenario", scenario, "--layouts", ENGINE_LAYOUTS, "--out", out]
    if transport in TRANSPORTS:
        words += ["--transport", transport]
    return pdrepro(*words)


def baseline(out: str | Path, peer: str = PEER) -> str:
    """The client side of the fabric baseline against ``peer`` into ``out`` (the server side runs first, there)."""
    return pdrepro("baseline", "--peer", peer, "--out", out)


def baseline_server() -> str:
    return pdrepro("baseline", "--role", "server")


def ib_devices(out: str | Path) -> str:
    """The GPU-to-NIC map SGLang reads, written to ``out``."""
    return pdrepro("ib-devices", "--out", out)


def stack_down(run: str | Path) -> str:
    return pdrepro("stack", "down", run)


def doctor() -> str:
    return pdrepro("doctor")


def examples() -> dict[str, str]:
    """Every builder's line with sample values, by builder name: what a test parses (and, where cheap, runs)."""
    run = f"{RUN}/with space"
    lines: dict[str, Callable[[], str]] = {
        "analyze": lambda: analyze(run), "check": lambda: check(run),
        "judge ab": lambda: judge("ab", run), "judge tune": lambda: judge("tune", run),
        "judge compare": lambda: judge("compare", run),
        "gpu_check": lambda: gpu_check(f"{RUN}/scenario.yaml", f"{RUN}/engine-ceiling"),
        "gpu_check tcp": lambda: gpu_check(f"{RUN}/scenarios/baseline.yaml", f"{RUN}/engine-ceiling-2", "tcp"),
        "gpu_check rdma": lambda: gpu_check("onebox-qwen25-0.5b", run, "rdma"),
        "baseline": lambda: baseline(run), "baseline peer": lambda: baseline("out dir", "10.0.0.2"),
        "baseline_server": baseline_server,
        "ib_devices": lambda: ib_devices("/etc/pdrepro/ib_devices.json"),
        "stack_down": lambda: stack_down(run), "doctor": doctor, "make lock": lambda: make("lock"),
    }
    return {name: build() for name, build in lines.items()}
