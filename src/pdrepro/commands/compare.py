"""``pdrepro compare``: both configurations of a comparison scenario on this box, one after the other.

Each configuration is an arm: ``stack up --stack <its kind>`` into RUN/<configuration>, the sweep at the
scenario's open-loop rate against that stack (``sweep --configuration NAME --out RUN``, which writes into
the same folder), then ``stack down``. The disaggregated arm runs first. RUN/compare.json says which arms
are done; run again with the same --out, it starts at the first arm not done (the sweep itself skips what
it finished). Once every arm is done the run is analysed and judged (``analyze``, ``check``).

The stages are the CLI commands of their names, run in this process through ``run_command``, so their
flags, messages and exit codes are theirs; this module adds only the order and the state file.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from urllib.parse import urlsplit

from ..core.errors import UserError
from ..launch.stack import record
from ..launch.stack.regular import STACKS
from ..pipeline import STOPPED as STOPPED_STATUSES
from ..rundir import comparestate as state
from ..scenario.model import ComparisonScenario, load_scenario
from ..sweep.config import is_disaggregated
from ..sweep.signals import raise_on_signals
from . import run_command
from .render import add_site_options

HELP = "run a comparison scenario's two configurations on this box, one after the other, and judge them"
EXIT_BAD_INPUT = 2
# Flags this command sets on a stage itself: --sweep-args may not set them again.
OWN_SWEEP_FLAGS = ("--scenario", "--router", "--prefill", "--decode", "--worker", "--configuration", "--out",
                   "--model-path", "--dataset-path", "--bench-in-place", "--logs-from", "--no-analyze")


def register(sub) -> None:
    p = sub.add_parser("compare", help=HELP, description=(
        "For each configuration of a comparison scenario (the disaggregated one first): `pdrepro stack up "
        "--stack KIND --out RUN/CONFIGURATION`, `pdrepro sweep --configuration CONFIGURATION --out RUN "
        "--bench-in-place` against it, `pdrepro stack down`. Then `pdrepro analyze RUN` and `pdrepro check "
        "RUN`. RUN/compare.json records the arms done: run it again with the same --out to resume at the "
        "first one not done. Exit status: 0 all done and the checks pass, 1 an arm's sweep or a check "
        "failed, 2 bad input, 130/143 interrupted."))
    p.add_argument("--scenario", required=True, help="shipped comparison scenario name or path to its YAML")
    p.add_argument("--out", required=True, type=Path, metavar="RUN", help="run directory (created; reused to resume)")
    p.add_argument("--prefill-ip", help="this host's address, advertised by the servers (default 127.0.0.1)")
    add_site_options(p)
    p.add_argument("--start-timeout", type=float, metavar="SEC",
                   help="seconds each server may take to come up (default: stack up's)")
    p.add_argument("--sweep-args", metavar="WORDS",
                   help='more `pdrepro sweep` flags, one shell-quoted string: --sweep-args="--wait-timeout 60"')
    p.set_defaults(func=run)


def _arms(scenario: ComparisonScenario) -> list[tuple[str, str]]:
    """(configuration, stack kind), the disaggregated configuration first."""
    names = list((scenario.reference.configurations if scenario.reference else {}) or {})
    kinds = {name: STACKS[0] if is_disaggregated(name) else STACKS[1] for name in names}
    stacks = scenario.launch.stacks if scenario.launch else ()
    if sorted(kinds.values()) != sorted(STACKS) or not set(STACKS) <= set(stacks):
        raise UserError(f"scenario {scenario.name}: `pdrepro compare` runs one disaggregated configuration (named "
                        f"like 1P1D) and one regular one, with launch.stacks [{', '.join(STACKS)}]; it names "
                        f"{', '.join(names) or 'none'} with launch.stacks {list(stacks)}")
    return sorted(kinds.items(), key=lambda item: STACKS.index(item[1]))


def _site_words(args) -> list[str]:
    """The site options as `stack up` takes them."""
    words: list[str] = []
    for flag, value in (("--model", args.model), ("--dataset", args.dataset), ("--gpus", args.gpus),
                        ("--prefill-ip", args.prefill_ip)):
        if value is not None:
            words += [flag, str(value)]
    if args.mem_fraction is not None:
        words += ["--mem-fraction", f"{args.mem_fraction:g}"]
    words += [f"--server-arg={value}" for value in args.server_arg]
    if args.force_tcp:
        words.append("--force-tcp")
    if args.start_timeout is not None:
        words += ["--start-timeout", f"{args.start_timeout:g}"]
    return words


def _sweep_extra(text: str | None) -> list[str]:
    try:
        words = shlex.split(text or "")
    except ValueError as exc:
        raise UserError(f"--sweep-args {text!r}: {exc}; quote it as a shell would") from None
    for word in words:
        if word.split("=", 1)[0] in OWN_SWEEP_FLAGS:
            raise UserError(f"--sweep-args sets {word.split('=', 1)[0]}, which `pdrepro compare` sets itself; leave it out")
    return words


def _endpoints(folder: Path) -> list[str]:
    """The sweep's endpoint flags for the stack `stack up` recorded in ``folder``: its router, and its
    prefill and decode servers (--prefill, --decode) or its regular ones (--worker)."""
    rec = record.read(folder)
    words: list[str] = []
    for p in rec.processes:
        parts = urlsplit(p.health_url)
        base = f"{parts.scheme}://{parts.netloc}"
        flag = {"router": "--router", "prefill": "--prefill", "decode": "--decode"}.get(p.role.value, "--worker")
        words += [flag, base]
    return words


def _say(line: str) -> None:
    print(f"== compare: {line}", flush=True)


def _arm(args, scenario: str, name: str, kind: str, folder: Path, sweep_extra: list[str]) -> int:
    """One configuration: its stack up, the sweep against it, its stack down (always, once it was up)."""
    if record.path(folder).is_file():
        # An earlier run of this arm was cut off: what it left running is stopped first (down proves
        # every process before it signals it, and names what it leaves alone).
        _say(f"{name}: stopping what an earlier run of this arm left (pdrepro stack down {folder})")
        rc = run_command(["stack", "down", str(folder)])
        if rc:
            return rc
    _say(f"{name}: pdrepro stack up --stack {kind} --out {folder}")
    rc = run_command(["stack", "up", "--stack", kind, "--scenario", scenario, "--out", str(folder),
                      *_site_words(args)])
    if rc:
        return rc
    try:
        sweep = ["sweep", "--scenario", scenario, *_endpoints(folder), "--configuration", name, "--out", str(args.out),
                 "--model-path", str(args.model), "--dataset-path", str(args.dataset), "--bench-in-place",
                 "--logs-from", str(folder / "logs"), "--no-analyze", *sweep_extra]
        _say(f"{name}: pdrepro {' '.join(shlex.quote(w) for w in sweep)}")
        return run_command(sweep)
    finally:
        _say(f"{name}: pdrepro stack down {folder}")
        down = run_command(["stack", "down", str(folder)])
        if down:
            print(f"pdrepro compare: stack down {folder} exited {down}; see `pdrepro stack status {folder}`",
                  file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    scenario = load_scenario(args.scenario)
    if not isinstance(scenario, ComparisonScenario):
        raise UserError(f"--scenario {args.scenario}: a {scenario.kind} scenario; `pdrepro compare` runs comparison "
                        "scenarios (e.g. a10-qwen25-7b-onebox-rate1)")
    arms = _arms(scenario)
    if not args.model or not args.dataset:
        raise UserError("pass --model DIR and --dataset FILE: the servers load the model, the bench client reads its "
                        "tokenizer and draws its prompts from the dataset (`pdrepro offline-model` makes both)")
    sweep_extra = _sweep_extra(args.sweep_args)
    if args.out.exists() and not args.out.is_dir():
        raise UserError(f"--out {args.out}: is a file, not a run directory; give a folder (new, or a run to resume)")
    args.out.mkdir(parents=True, exist_ok=True)
    book = state.open_state(args.out, scenario.name, scenario.fingerprint, [name for name, _ in arms])
    with raise_on_signals():
        for name, kind in arms:
            if book.done(name):
                _say(f"{name}: done in an earlier run ({book.seconds(name):.0f} s); skipped")
                continue
            book.start(name)
            rc = _arm(args, args.scenario, name, kind, args.out / name, sweep_extra)
            book.end(name, rc)
            if rc:
                _say(f"{name}: exited {rc} after {book.seconds(name):.0f} s; run the same command again to resume")
                return rc if rc == EXIT_BAD_INPUT or rc in STOPPED_STATUSES else 1
            _say(f"{name}: done in {book.seconds(name):.0f} s")
        _say(f"pdrepro analyze {args.out}")
        analyzed = run_command(["analyze", str(args.out)])
        if analyzed in STOPPED_STATUSES:
            return analyzed
        _say(f"pdrepro check {args.out}")
        checked = run_command(["check", str(args.out)])
    _say(f"report: {args.out / 'report.md'}")
    return checked or (1 if analyzed else 0)
