"""The engine alone measured more than once beside a tune: one run of it is as noisy as one run of the
servers (on an H200 over TCP four runs in a row gave 1.50 to 1.80 GB/s at one length), so a figure set
against a single run says as much about that run as about the figure.

The runs are RUN/engine-ceiling (the first, as engineceiling.load_ceiling reads it) and every
RUN/engine-ceiling-<n>, n = 2, 3, ... (each the folder `pdrepro gpu-check --out RUN/engine-ceiling-<n>`
writes, its result.json read as the first one's is). A gap in the numbers is no error: every repeat that is
there is read, and each is named where its figure is shown. Each is refused on one line naming it and the fix
when it is not a gpu-check folder (a file, a link to nothing, no result.json), when its numbers do not name
a repeat (engine-ceiling-1, engine-ceiling-02: the first run has no number), when its transport is not the
others', or when its rates are another run's to the last digit (a copy or a link of that run counts the
same measurement twice and narrows the spread it is there to show). A link to a folder is read as the
folder it points at; what it holds is checked like any other.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from ..core import advice
from .engineceiling import Ceiling, CeilingError, from_gpu_check, load_ceiling, scenario_file

FIRST = "engine-ceiling"
_REPEAT = re.compile(r"engine-ceiling-(\d+)")


@dataclass(frozen=True)
class EngineRunFile:
    """One run of the engine alone: its file (relative to the tune's folder), tokens -> layout -> ceiling, and
    the transport the engine used where recorded."""

    source: str
    ceiling: dict[int, dict[str, Ceiling]]
    transport: str | None

    def rates(self) -> tuple:
        """Every rate of the run, in order: two runs of the engine never time every write the same."""
        return tuple(sorted((L, shape, c.GB_s) for L, shapes in self.ceiling.items() for shape, c in shapes.items()))


def _folder(source: str) -> str:
    return source.split("/")[0] if "/" in source else FIRST  # the older RUN/engine-ceiling.json is the first run


def _remeasure(name: str, run_root: Path, transport: str | None = None) -> str:
    line = advice.gpu_check(scenario_file(run_root), f"{advice.RUN}/{name}", transport)
    return f"measure it again with `{line}` on the tune's box"


def repeat_names(run_root: Path) -> list[str]:
    """The repeats' folder names in RUN, by their number. A name of the pattern that is not a repeat's is refused:
    left out silently, a measurement someone took would be missing from the spread without a word."""
    try:
        names = os.listdir(run_root)
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise CeilingError(f"{run_root}: cannot be listed ({exc.strerror}); make it readable") from None
    found: list[tuple[int, str]] = []
    for name in names:
        m = _REPEAT.fullmatch(name)
        if m is None:
            continue
        n = int(m[1])
        if n < 2 or m[1] != str(n):
            raise CeilingError(f"{Path(run_root) / name}: is no name of a repeat of the engine alone: the first run "
                               "is engine-ceiling, the repeats engine-ceiling-2, engine-ceiling-3, ...; rename it")
        found.append((n, name))
    return [name for _, name in sorted(found)]


def _repeat(run_root: Path, name: str) -> EngineRunFile:
    folder = Path(run_root) / name
    if not folder.is_dir():  # a link to a folder is followed; to nothing, or to anything else, is refused
        what = "a link to nothing" if folder.is_symlink() and not folder.exists() else "not a folder"
        raise CeilingError(f"{folder}: is {what}, where a repeat of the engine alone is the folder `pdrepro "
                           f"gpu-check --out RUN/{name}` writes; move it aside, or {_remeasure(name, run_root)}")
    result = folder / "result.json"
    if not os.path.lexists(result):
        raise CeilingError(f"{folder}: holds no result.json (gpu-check did not finish there); {_remeasure(name, run_root)}, "
                           "or move the folder aside")
    ceiling, transport = from_gpu_check(result)
    return EngineRunFile(f"{name}/result.json", ceiling, transport)


def load_engine_runs(run_root: Path) -> list[EngineRunFile]:
    """Every run of the engine alone in the tune's folder, the first first, then the repeats by number; empty
    without any. Each is read and checked as the first one is; see the module's text for what is refused."""
    run_root = Path(run_root)
    runs: list[EngineRunFile] = []
    first = load_ceiling(run_root)
    if first is not None:
        runs.append(EngineRunFile(first[2], first[0], first[1]))
    runs += [_repeat(run_root, name) for name in repeat_names(run_root)]
    known = [r for r in runs if r.transport]
    for r in known[1:]:
        if r.transport != known[0].transport:
            raise CeilingError(f"{run_root / r.source}: the engine used {r.transport}, in {known[0].source} "
                               f"{known[0].transport}: the runs of the engine alone must be of one transport; "
                               f"{_remeasure(_folder(r.source), run_root, known[0].transport)}")
    seen: dict[tuple, str] = {}
    for r in runs:
        rates = r.rates()
        if rates and rates in seen:
            raise CeilingError(f"{run_root / r.source}: its rates are those of {seen[rates]} to the last digit: a "
                               "copy (or a link) of that run, not a repeat, would narrow the spread it is there to "
                               f"show; {_remeasure(_folder(r.source), run_root)}")
        seen.setdefault(rates, r.source)
    return runs
