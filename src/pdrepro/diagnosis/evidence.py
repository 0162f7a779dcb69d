"""A run's evidence, gathered once for every cause: the kind the folder records (kinds.registry), the runs it
holds (itself, or a composite's members), each judged in memory by its own kind (the analysis' summary: the
transport, the NIC witness and its rails, the phases, the engine ceiling), a load's and a tune's own summaries,
and the nodes' records (nodes.py). Nothing is written; a member whose summary cannot be made is kept with why,
so the causes it would have shown are listed as unknown rather than guessed."""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from ..analysis.transport_evidence import transport_facts
from ..core.errors import UserError
from ..kinds import registry
from ..kinds.base import RunKind
from ..kinds.summarykind import SummaryKind
from ..rundir import RunDir
from ..rundir.loadsummary import LoadSummary
from ..rundir.summarymodel import Summary, TransportEvidence
from ..rundir.tunesummary import TuneSummary
from ..scenario.model import Scenario, load_scenario, resolve_scenario
from ..scenario.seams import run_backend
from ..verdicts.gates import no_fabric, tcp_without_rdma
from .nodes import NodeFile, read_nodes

# How deep below the folder a composite's member may sit (a comparison of comparisons: cmp/<config>/<run>).
MEMBER_DEPTH = 3
# A folder of a run's own outputs, never a member run.
_NOT_MEMBERS = {"bench", "logs", "counters", "metrics", "plots", "raw", "nodes", "engine-ceiling", "scenarios",
                "console", "stack"}


@dataclass
class Member:
    """One run the folder holds (a sweep's or a smoke's), with its summary or why it has none."""

    rel: str
    run: RunDir
    scenario: Scenario | None = None
    summary: Summary | None = None
    problem: str | None = None
    # Read from the folder's own files where it has logs but no summary (a load's servers log once for all its
    # steps): the same rule on the same evidence the analysis would summarise (own_fabric).
    fabric_free: bool = False

    @property
    def no_fabric(self) -> bool:
        """The run's own summary shows its KV never met a fabric: the scenario allows TCP, every engine used it and
        the sweep found no RDMA device on its nodes (the check and the report ask the same). Its line rate is then
        a sanity bound, not a figure to fall short of, and TCP is its path, not a fallback."""
        s = self.summary
        return tcp_without_rdma(s, s.scenario.transport) if s is not None else self.fabric_free


@dataclass
class RunEvidence:
    root: Path
    kind: str
    members: list[Member] = field(default_factory=list)
    load: LoadSummary | None = None
    composite_problem: str | None = None
    tune: TuneSummary | None = None
    tune_problem: str | None = None
    tune_root: Path | None = None
    nodes: dict[str, NodeFile] = field(default_factory=dict)
    nodes_where: str = "nodes"
    # The folder's own logs where it is no member (a load's servers log once for all its steps).
    own_logs: Member | None = None

    def log_runs(self) -> list[Member]:
        """The runs whose server logs are read, each with the scenario it is judged by (None: not known)."""
        return ([self.own_logs] if self.own_logs is not None else []) + self.members

    def summaries(self) -> list[Member]:
        return [m for m in self.members if m.summary is not None]

    def no_fabric_why(self) -> str:
        """Why no fact of an RDMA fabric (a port's MTU, its GID, relaxed ordering on its PCIe path, its place beside
        the GPU, the split over rails) can cost this run: every run it holds moved its KV over TCP on a box its sweep
        found without an RDMA device, as its scenario allows (Member.no_fabric). '' where one can, or where no run
        was summarised: those causes are then judged, or listed as unknown, from what the folder holds."""
        runs = self.summaries() or ([self.own_logs] if self.own_logs is not None else [])
        if not runs or not all(m.no_fabric for m in runs):
            return ""
        return ("the KV moved over TCP on a box the sweep found without an RDMA device, as the scenario allows: no "
                "RDMA port carried it")

    def rel(self, path: Path) -> str:
        """A path as the diagnosis names it: relative to the folder diagnosed, also where it lies beside it (a tune
        in the folder above is ".."), so a diagnosis never carries the paths of the machine it was made on."""
        try:
            return str(Path(path).relative_to(self.root))
        except ValueError:
            return os.path.relpath(Path(path).resolve(), self.root.resolve())


def own_fabric(run: RunDir, scenario: Scenario) -> bool:
    """Whether a folder's own files show its KV never met a fabric, where it keeps its servers' logs but no summary:
    the engines' start-up lines and the sweep's record of its host's RDMA devices, read as the analysis reads them
    for a summary (analysis.transport_evidence), held to the check's own rule (verdicts.gates.no_fabric)."""
    record = run.read_provenance()
    used, facts = transport_facts(run, None if record is None else record.to_json(), run_backend(run.root, scenario))
    return no_fabric(used, TransportEvidence.model_validate(facts), scenario.transport)


def _holds_run(folder: Path) -> bool:
    return (folder / "bench").is_dir() or (folder / "logs").is_dir() or (folder / "raw").is_dir()


def _member_folders(root: Path, depth: int = 0) -> list[Path]:
    """The runs under ``root`` a composite holds: folders (never links) holding a run's outputs, nearest first."""
    if depth >= MEMBER_DEPTH:
        return []
    found: list[Path] = []
    try:
        children = sorted(p for p in root.iterdir() if p.is_dir() and not p.is_symlink() and p.name not in _NOT_MEMBERS)
    except OSError:
        return []
    for child in children:
        if _holds_run(child):
            found.append(child)
        else:
            found += _member_folders(child, depth + 1)
    return found


def _scenario_spec(member: RunDir, root: Path, spec: str | None) -> str | None:
    """The scenario a member is judged by: the one given, else its own scenario.yaml, else the nearest one above it
    inside the folder diagnosed (a comparison keeps one per configuration, above its runs)."""
    if spec is not None or member.scenario_file.is_file():
        return spec
    for folder in member.root.parents:
        if not folder.is_relative_to(root):
            break
        if (folder / "scenario.yaml").is_file() and not (folder / "scenario.yaml").is_symlink():
            return str(folder / "scenario.yaml")
    return None


def _judge(member: Member, root: Path, spec: str | None) -> None:
    """The member's summary, made in memory by the kind it records; why not, where it cannot be made."""
    try:
        scenario = resolve_scenario(_scenario_spec(member.run, root, spec), member.run.root)
        member.scenario = scenario
        kind = registry.kind_of(member.run, scenario)
        if not isinstance(kind, SummaryKind):
            member.problem = f"holds a {kind.name} run, not one run's figures"
            return
        member.summary = kind.judged(member.run, scenario).summary
    except (UserError, ValidationError, OSError, ValueError) as exc:
        member.problem = _why(exc)


def _why(exc: BaseException) -> str:
    return str(exc).splitlines()[0][:400] if str(exc) else type(exc).__name__


def _composites(ev: RunEvidence, run: RunDir, kind: RunKind, spec: str | None) -> None:
    """The composite's own summary (a load's steps, a tune's settings) by its kind; a tune lying beside the run."""
    scenario = ev.own_logs.scenario if ev.own_logs is not None else None
    try:
        own = kind.composite_summary(run, scenario)
    except (UserError, ValidationError, OSError, ValueError) as exc:
        ev.composite_problem = _why(exc)
        own = None
    if isinstance(own, LoadSummary):
        ev.load = own
    if isinstance(own, TuneSummary):
        ev.tune, ev.tune_root = own, run.root
        return
    for beside in _folders_beside(run.root):
        other = registry.kind_of(RunDir(beside))
        if not issubclass(other.summary_model, TuneSummary):
            continue  # only a tune's settings speak for a knob
        try:
            found = other.composite_summary(RunDir(beside), None)
        except (UserError, ValidationError, OSError, ValueError) as exc:
            ev.tune_problem = f"{ev.rel(beside)}: {_why(exc)}"
            continue
        if not isinstance(found, TuneSummary):
            continue
        # A tune beside the run speaks for it only when it tuned the run's own scenario.
        names = {m.scenario.name for m in ev.log_runs() if m.scenario is not None}
        if found.scenario in names:
            ev.tune, ev.tune_root = found, beside
            return
        ev.tune_problem = (f"the tune in {ev.rel(beside)} tuned scenario {found.scenario}, not this run's "
                           f"({', '.join(sorted(names)) or 'none read'})")


def _folders_beside(root: Path) -> list[Path]:
    """The folder holding the run (a tune holds its settings' runs) and the folders beside it, at most 64."""
    parent = root.resolve().parent
    try:
        beside = sorted(p for p in parent.iterdir() if p.is_dir() and not p.is_symlink() and p != root.resolve())
    except OSError:
        beside = []
    return [parent, *beside[:63]]


def readable_folder(root: Path) -> None:
    """A folder `diagnose` can read, or one line saying why not (exit 2)."""
    if not root.exists():
        raise UserError(f"{root}: no such run folder; give the folder a run wrote (holding bench/ and logs/, or a "
                        "composite's state file)")
    if not root.is_dir():
        raise UserError(f"{root}: is a file, not a run folder; give the folder a run wrote")
    try:
        next(iter(root.iterdir()), None)
    except OSError as exc:
        raise UserError(f"{root}: cannot be read ({exc.strerror or type(exc).__name__}); give a folder you can "
                        "read") from None


def gather(root: Path, spec: str | None = None) -> RunEvidence:
    """Everything the causes read, from the folder ``root`` and the scenario ``spec`` (None: each run's own)."""
    readable_folder(root)
    if spec is not None:
        load_scenario(spec)  # a scenario that cannot be read is bad input (exit 2), not an unknown per member
    run = RunDir(root)
    kind = registry.kind_of(run)
    ev = RunEvidence(root=root, kind=kind.name)
    # A kind whose summary is one run's figures (a sweep's, a smoke's) is its own member; a comparison's summary sets
    # configurations side by side, and a composite's runs are its members: their folders are read instead.
    model = kind.summary_model
    if isinstance(kind, SummaryKind) and issubclass(model, Summary) and not model.compares_configurations \
            and _holds_run(root):
        ev.members.append(Member(rel=".", run=run))
    else:
        ev.members += [Member(rel=str(p.relative_to(root)), run=RunDir(p)) for p in _member_folders(root)]
    if not ev.members and kind is registry.SWEEP and not _holds_run(root):
        raise UserError(f"{root}: holds no run (no bench/, logs/ or raw/ here or in a member's folder, no state file "
                        "of a composite); give the folder a run wrote")
    for member in ev.members:
        _judge(member, root, spec)
    if run.logs_dir.is_dir() and not any(m.rel == "." for m in ev.members):
        ev.own_logs = Member(rel=".", run=run)
        try:
            ev.own_logs.scenario = resolve_scenario(spec, root)
        except (UserError, ValidationError, OSError, ValueError) as exc:
            ev.own_logs.problem = _why(exc)
        else:
            # Files that cannot be read as the analysis reads them leave the fabric unknown (never assumed absent),
            # and say nothing against the logs the other causes read.
            with contextlib.suppress(UserError, ValidationError, OSError, ValueError):
                ev.own_logs.fabric_free = own_fabric(run, ev.own_logs.scenario)
    _composites(ev, run, kind, spec)
    # The nodes' records: the folder's own, else the first member's that has them.
    for where in [root, *(m.run.root for m in ev.members if m.rel != ".")]:
        records = read_nodes(where)
        if records:
            ev.nodes = records
            ev.nodes_where = ev.rel(where / "nodes")
            break
    return ev
