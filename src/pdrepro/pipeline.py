"""The reproduction pipeline, written once: preflight, sweep, analyze, gates, then the first failing status.

`pdrepro repro` runs it; `make repro`, `make onebox-repro`, the SLURM script and the Kubernetes Job call
that command, and the gate suite's ``--router`` fixture runs the same sweep stage (``run_sweep``). Each
stage is the CLI command of its name, run in this process through ``cli.main`` (so its flags, messages and
exit codes are that command's); the gates are ``pytest GATES --run-dir RUN`` in a child process, because
pytest owns its process (plugins, capture, exit).

A sweep stopped by bad input or environment (exit 2) ends the pipeline: there is nothing to judge. A
sweep that lost a length (exit 1) is analysed and gated like the rest: the gates name the length.
"""

from __future__ import annotations

import importlib.util
import shlex
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass

from .core.errors import UserError

DEFAULT_SCENARIO = "h20-qwen3-235b-1p1d"
DEFAULT_GATES = "repro"
EXIT_BAD_INPUT = 2


@dataclass(frozen=True)
class Sweep:
    """The sweep stage's inputs: the flags the pipeline hands to `pdrepro sweep`; None leaves one out."""

    scenario: str
    router: str
    out: str
    prefill: str | None = None
    decode: str | None = None
    model_path: str | None = None
    dataset_path: str | None = None
    image: str | None = None
    logs_from: str | None = None
    prefill_logs_from: str | None = None
    configuration: str | None = None
    thresholds: str | None = None
    bench_in_place: bool = False
    extra: tuple[str, ...] = ()     # further `pdrepro sweep` flags, as given (--sweep-args)

    def argv(self, *, analyze: bool) -> list[str]:
        argv = ["sweep", "--scenario", self.scenario, "--router", self.router]
        for flag, value in (("--prefill", self.prefill), ("--decode", self.decode), ("--model-path", self.model_path),
                            ("--dataset-path", self.dataset_path), ("--image", self.image),
                            ("--logs-from", self.logs_from), ("--prefill-logs-from", self.prefill_logs_from),
                            ("--configuration", self.configuration), ("--thresholds", self.thresholds)):
            if value:
                argv += [flag, value]
        if self.bench_in_place:
            argv.append("--bench-in-place")
        argv += ["--out", self.out]
        if not analyze:
            argv.append("--no-analyze")
        return argv + list(self.extra)


@dataclass(frozen=True)
class Pipeline:
    sweep: Sweep
    preflight_role: str | None = None   # run `pdrepro doctor --role ROLE` first (on the node it names)
    gates: str = DEFAULT_GATES           # the gate suite's folder (repro/ of a checkout, or where it is mounted)
    pytest: tuple[str, ...] = ()         # the gates' pytest command; empty: this interpreter's pytest
    quiet: bool = False                  # no step announcements


def _cli(argv: list[str]) -> int:
    from .cli import main  # late: cli discovers the commands, one of which runs this pipeline

    return main(argv)


def run_sweep(sweep: Sweep, *, analyze: bool = False, cli: Callable[[list[str]], int] = _cli) -> int:
    """The sweep stage alone: its exit status (0, 1 for a failed length, 2 bad input, 130 interrupted)."""
    return cli(sweep.argv(analyze=analyze))


def gates_argv(p: Pipeline) -> list[str] | None:
    """The gates' command, or None when there is no pytest to run them (an image without it)."""
    if p.pytest:
        head = list(p.pytest)
    elif importlib.util.find_spec("pytest") is not None:
        head = [sys.executable, "-m", "pytest"]
    else:
        return None
    return [*head, p.gates, "--run-dir", p.sweep.out, "-p", "no:cacheprovider", "-q"]


def run(p: Pipeline, *, cli: Callable[[list[str]], int] = _cli,
        spawn: Callable[[list[str]], int] = lambda argv: subprocess.run(argv).returncode) -> int:
    """The whole pipeline; returns the first non-zero status of sweep, analyze and gates (or the preflight's)."""
    s = p.sweep

    def say(line: str) -> None:
        if not p.quiet:
            print(line, flush=True)

    if p.preflight_role:
        say(f"== 1/4 preflight: pdrepro doctor --role {p.preflight_role}")
        doctor = ["doctor", "--role", p.preflight_role, "--scenario", s.scenario]
        doctor += [*(["--model", s.model_path] if s.model_path else []),
                   *(["--dataset", s.dataset_path] if s.dataset_path else [])]
        rc = cli(doctor)
        if rc:
            return rc
    say(f"== 2/4 sweep: {s.scenario} against {s.router} into {s.out}")
    swept = run_sweep(s, cli=cli)
    if swept in (EXIT_BAD_INPUT, 130):
        return swept
    say(f"== 3/4 analyze {s.out}")
    # Thresholds given to the sweep are kept in RUN/scenario.yaml, which analyze and the gates read.
    analyzed = cli(["analyze", s.out])
    gates = gates_argv(p)
    if gates is None:
        # `pdrepro check` is the code the gates call, so the verdict is the same.
        say(f"== 4/4 gates: no pytest here, judging with pdrepro check {s.out}")
        judged = cli(["check", s.out])
    else:
        say(f"== 4/4 gates: pytest {p.gates} --run-dir {s.out}")
        judged = spawn(gates)
    say(f"report: {s.out}/report.md   gates: {s.out}/junit.xml")
    return next((status for status in (swept, analyzed, judged) if status), 0)


def split_words(text: str | None, option: str) -> tuple[str, ...]:
    try:
        return tuple(shlex.split(text or ""))
    except ValueError as exc:
        raise UserError(f"{option} {text!r}: {exc}; quote it as a shell would") from None
