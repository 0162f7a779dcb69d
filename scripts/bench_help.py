"""CPU seconds of `pdrepro --help` and of each command's `--help` (`make bench-help`).

Each is run RUNS times as a child process, the `pdrepro` beside this Python (what a user types); its CPU time
(user + system, from the kernel's count for waited-for children: resource.getrusage(RUSAGE_CHILDREN)) is taken per
run and the worst kept, so a lucky run hides nothing. Prints one line per command line, the worst of them all last,
and exits 1 when that is above --limit (the budget issue 34 set: 0.3 s on a 2-core machine), 0 otherwise. The
command lines come from the parser itself (every command, and every verb of one that has verbs), so a new command
is measured without an edit here."""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
from pathlib import Path

from pdrepro.commands import build_parser

DEFAULT_RUNS = 5
LIMIT_S = 0.3


def command_lines() -> list[list[str]]:
    """[] (the top level), then each command and each verb of a command with verbs, as the parser knows them."""
    found: list[list[str]] = [[]]

    def walk(parser: argparse.ArgumentParser, words: list[str]) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    found.append([*words, name])
                    walk(sub, [*words, name])

    walk(build_parser(), [])
    return found


def cpu_seconds(argv: list[str]) -> float:
    """CPU seconds (user + system) of one run of ``argv`` and whatever it started, to its end."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=60)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"bench-help: {' '.join(argv)} exited {done.returncode}: {done.stderr.strip()[-300:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=DEFAULT_RUNS, help="runs per command line (default %(default)s)")
    parser.add_argument("--limit", type=float, default=LIMIT_S, help="CPU seconds allowed (default %(default)s)")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error(f"--runs {args.runs}: give at least 1")
    pdrepro = Path(sys.executable).with_name("pdrepro")
    if not os.access(pdrepro, os.X_OK):
        raise SystemExit(f"bench-help: no {pdrepro}; run `make setup` first")
    worst: tuple[float, str] = (0.0, "")
    print(f"CPU seconds (user + system), the worst of {args.runs} runs each, on {os.cpu_count()} cores:")
    for words in command_lines():
        line = " ".join(["pdrepro", *words, "--help"])
        seconds = max(cpu_seconds([str(pdrepro), *words, "--help"]) for _ in range(args.runs))
        print(f"  {seconds:5.3f} s  {line}", flush=True)
        worst = max(worst, (seconds, line))
    verdict = "within" if worst[0] <= args.limit else "ABOVE"
    print(f"worst: {worst[0]:.3f} s ({worst[1]}), {verdict} the {args.limit:g} s budget")
    return 0 if worst[0] <= args.limit else 1


if __name__ == "__main__":
    sys.exit(main())
