"""The reproduction pipeline, written once: preflight, sweep, analyze, gates, then the first failing status.

`pdrepro repro` runs it; `make repro`, `make onebox-repro`, the SLURM script and the Kubernetes Job call that
command, and the gate suite's ``--router`` fixture runs the same sweep stage on a request built the same way
(commands.requests.pipeline_sweep_request). Each stage is the CLI command of its name, run in this process and
handed its typed request, never command words (issue 33): the caller hands in the stages (pdrepro.stages.Reproduction:
commands.requests.REPRODUCTION), so their messages and exit codes are those commands', and this module imports
nothing above it. The preflight and the pair check are fabric.request's DoctorRequest and PairRequest; the sweep is
the SweepRequest the command built once, before any stage ran (so a sweep input missing or mistyped is refused
before the preflight, not after it). The gates are ``pytest GATES --run-dir RUN --junitxml RUN/junit.xml`` in
a child process, because pytest owns its process (plugins, capture, exit); the JUnit file goes into the run because
`repro` made the run (the gates alone write nothing into a run they judge); a signal to the pipeline stops that
child quietly (core.signals.run_child).

A sweep stopped by bad input or environment (exit 2) ends the pipeline: there is nothing to judge. A
sweep that lost a length (exit 1) is analysed and gated like the rest: the gates name the length, and the
pipeline's status is the verdict's (the gates', which `pdrepro check` reaches on the same run). A stage
stopped by a signal (130, 143, 129) ends it with that status.
"""

from __future__ import annotations

import importlib.util
import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from .core import signals
from .core.errors import UserError
from .core.exits import EXIT_BAD_INPUT, STOPPED

if TYPE_CHECKING:
    from .stages import Reproduction
    from .sweep.request import SweepRequest

DEFAULT_SCENARIO = "h20-qwen3-235b-1p1d"
DEFAULT_GATES = "repro"
# A stage's status when a signal stopped it (128 + the signal's number): the pipeline ends there.
# Flags the pipeline sets on `pdrepro sweep` itself: --sweep-args may not set them again (the sweep would
# take the last one, and the stages after it would read another run than the one swept).
OWN_SWEEP_FLAGS = ("--scenario", "--router", "--prefill", "--decode", "--model-path", "--dataset-path", "--image",
                   "--logs-from", "--prefill-logs-from", "--configuration", "--thresholds", "--bench-in-place",
                   "--out", "--no-analyze")


@dataclass(frozen=True)
class Pipeline:
    sweep: SweepRequest                  # the whole sweep, endpoints and run folder (commands.requests builds it)
    preflight_role: str | None = None   # run `pdrepro doctor --role ROLE` first (on the node it names)
    gates: str = DEFAULT_GATES           # the gate suite's folder (repro/ of a checkout, or where it is mounted)
    pytest: tuple[str, ...] = ()         # the gates' pytest command; empty: this interpreter's pytest
    quiet: bool = False                  # no step announcements
    node_records: tuple[str, ...] = ()   # other nodes' records (doctor --out), kept in RUN/nodes and pair-checked
    deploy: str | None = None            # the rendered launch the pair check reads page size, KV layout, TP from


def keep_node_records(p: Pipeline) -> list[Path]:
    """The given records, each checked as a record, copied into RUN/nodes/<its role>.json (the run keeps what the
    pair check judged); a record without a role, two of one role, or one of the preflight's role is refused."""
    # The records' model (pydantic) loads only where records are given: `pdrepro --help` stays light.
    from .core.safewrite import make_folder, write_file  # noqa: PLC0415
    from .rundir import noderecord  # noqa: PLC0415

    seen: dict[str, str] = {}
    records = []
    for given in p.node_records:
        record = noderecord.read(Path(given))
        if record.role is None:
            raise UserError(f"--node-record {given}: says no role; write it with `pdrepro doctor --role ROLE --out FILE`")
        if record.role == p.preflight_role:
            raise UserError(f"--node-record {given}: is a {record.role} node's record, and the preflight writes this "
                            f"node's ({record.role}); give the other node's record")
        if record.role in seen:
            raise UserError(f"--node-record {given}: a second {record.role} record (the first: {seen[record.role]}); "
                            "give one per role")
        seen[record.role] = given
        records.append(record)
    kept = []
    for record in records:
        path = noderecord.record_path(p.sweep.out, str(record.role))
        make_folder(path.parent, "repro")
        write_file(path, record.model_dump_json(indent=2) + "\n", "repro")
        kept.append(path)
    return kept


def gates_argv(p: Pipeline) -> list[str] | None:
    """The gates' command, or None when there is no pytest to run them (an image without it)."""
    if p.pytest:
        head = list(p.pytest)
    elif importlib.util.find_spec("pytest") is not None:
        head = [sys.executable, "-m", "pytest"]
    else:
        return None
    # `repro` made the run, so its JUnit file may live there; the gates alone write it only where told.
    return [*head, p.gates, "--run-dir", str(p.sweep.out), "-p", "no:cacheprovider", "-q",
            f"--junitxml={p.sweep.out}/junit.xml"]


def check_gates(gates: str) -> None:
    """GATES is the gate suite (a folder whose conftest.py declares --run-dir, or a test file in one), checked
    before any stage runs: pytest given a missing path ends with its own usage error about --run-dir (exit 4),
    after the whole sweep has run."""
    path = Path(gates)
    suite = path if path.is_dir() else path.parent
    if not path.exists():
        problem = "no such folder"
    elif not (suite / "conftest.py").is_file():
        problem = "holds no conftest.py, so it is not the gate suite"
    else:
        return
    raise UserError(f"--gates {gates}: {problem}; give the gate suite's folder (repro/ of this bundle, or where "
                    "it is mounted)")


def run(p: Pipeline, *, stages: Reproduction, spawn: Callable[[list[str]], int] = signals.run_child) -> int:
    """The whole pipeline; returns the verdict's status (the gates'), else the first non-zero status of the
    stages before it (a preflight, a sweep stopped by bad input, a signal)."""
    from .fabric.request import DoctorRequest, PairRequest  # noqa: PLC0415  (light; kept off the import of --help)

    s = p.sweep
    gates = gates_argv(p)
    if gates is not None:
        check_gates(p.gates)

    def say(line: str) -> None:
        if not p.quiet:
            print(line, flush=True)

    kept = keep_node_records(p) if p.node_records else []
    if p.preflight_role:
        say(f"== 1/4 preflight: pdrepro doctor --role {p.preflight_role}")
        from .core.safewrite import make_folder  # noqa: PLC0415
        from .rundir.noderecord import record_path  # noqa: PLC0415

        record = record_path(s.out, p.preflight_role)
        make_folder(record.parent, "repro")
        # This node held to its role, with the sweep's model, dataset and image: what the servers here will read.
        rc = stages.doctor(DoctorRequest(role=p.preflight_role, scenario=s.scenario,
                                         model=Path(s.model_path) if s.model_path else None,
                                         dataset=Path(s.dataset_path) if s.dataset_path else None,
                                         image=s.image or None, out=record))
        if rc:
            return rc
    if kept:
        from .rundir.noderecord import record_path  # noqa: PLC0415

        prefill, decode = (record_path(s.out, role) for role in ("prefill", "decode"))
        missing = [path for path in (prefill, decode) if not path.is_file()]
        if missing:
            raise UserError(f"{missing[0]}: no record of that node for the pair check; write it there with "
                            "`pdrepro doctor --role ROLE --out FILE` and pass --node-record FILE")
        say(f"== 1/4 pair check: pdrepro doctor --pair {prefill} {decode}")
        # The launch's facts from the rendered launch when one is named, else from the scenario swept.
        rc = stages.pair(PairRequest(pair=(prefill, decode), deploy=Path(p.deploy) if p.deploy else None,
                                     scenario=None if p.deploy else s.scenario))
        if rc:
            return rc
    say(f"== 2/4 sweep: {s.scenario} against {s.router} into {s.out}")
    # The pipeline analyses as its own stage (the third), so its sweep never does.
    swept = stages.sweep(replace(s, no_analyze=True))
    if swept == EXIT_BAD_INPUT or swept in STOPPED:
        return swept
    say(f"== 3/4 analyze {s.out}")
    from .rundir.request import AnalyzeRequest, CheckRequest  # noqa: PLC0415  (rundir loads pydantic: not for --help)

    # Thresholds given to the sweep are kept in RUN/scenario.yaml, which analyze and the gates read.
    analyzed = stages.judging.analyze(AnalyzeRequest(s.out))
    if analyzed in STOPPED:
        return analyzed
    if gates is None:
        # `pdrepro check` is the code the gates call, so the verdict is the same.
        say(f"== 4/4 gates: no pytest here, judging with pdrepro check {s.out}")
        judged = stages.judging.check(CheckRequest(s.out))
    else:
        say(f"== 4/4 gates: pytest {p.gates} --run-dir {s.out}")
        judged = spawn(gates)
    say(f"report: {s.out}/report.md   gates: {s.out}/junit.xml")
    # The verdict is the gates' (what `pdrepro check` says of the same run): a length the sweep lost is a
    # length the gates fail, and a summary analyze could not write is judged from the inputs all the same.
    return judged


def split_words(text: str | None, option: str) -> tuple[str, ...]:
    try:
        return tuple(shlex.split(text or ""))
    except ValueError as exc:
        raise UserError(f"{option} {text!r}: {exc}; quote it as a shell would") from None


def sweep_extra(text: str | None) -> tuple[str, ...]:
    """--sweep-args as words, refusing a flag the pipeline sets on the sweep itself."""
    words = split_words(text, "--sweep-args")
    for word in words:
        flag = word.split("=", 1)[0]
        if flag in OWN_SWEEP_FLAGS:
            raise UserError(f"--sweep-args sets {flag}, which `pdrepro repro` sets on the sweep itself; pass it as "
                            f"`pdrepro repro {flag} ...` instead" if flag != "--no-analyze" else
                            "--sweep-args sets --no-analyze, which `pdrepro repro` sets on the sweep itself (it "
                            "analyses as its own stage); leave it out")
    return words
